package db

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// StatSample is one point of the dashboard charts: counters over the window
// [WindowStart, WindowEnd) and gauges at SampledAt. The maintenance role
// writes one every ~10 s and keeps about two hours.
type StatSample struct {
	SampledAt   time.Time `json:"sampled_at"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// Ingested counts callbacks received in the window.
	Ingested int64 `json:"ingested"`
	// IngestedTotal is messages_id_seq's high-water mark: a running total
	// that may run ahead of the true count by up to 100 per database session
	// (the sequence's cache). Use Ingested for rates.
	IngestedTotal int64 `json:"ingested_total"`
	// Delivered and Failed count attempts in the window by outcome (every
	// non-2xx outcome is a failure).
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
	// ErrorRate is Failed / (Delivered + Failed), 0 without attempts.
	ErrorRate float64 `json:"error_rate"`
	// E2EP50Ms and E2EP99Ms are end-to-end latencies (received → delivered)
	// of the window's successful attempts, 0 without any; they come from a
	// histogram with 1 % buckets and are within 0.5 % of the exact values.
	E2EP50Ms float64 `json:"e2e_p50_ms"`
	E2EP99Ms float64 `json:"e2e_p99_ms"`
	// BacklogTotal counts pending deliveries; BacklogPerQueue[q] those of
	// logical queue q.
	BacklogTotal    int64   `json:"backlog_total"`
	BacklogPerQueue []int64 `json:"backlog_per_queue"`
	// BacklogEstimated reports a backlog above statExactBacklog: the total is
	// the statistics collector's live count, the per-queue split comes from
	// a block sample and the oldest age from the lowest ids.
	BacklogEstimated bool `json:"backlog_estimated,omitempty"`
	// OldestPendingAgeSeconds is how long ago the oldest pending delivery's
	// callback was received (0 when nothing is pending).
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	DeadLettersTotal        int64   `json:"dead_letters_total"`
	// QueryMs is how long taking the sample took.
	QueryMs float64 `json:"query_ms"`
}

// Rate returns n per second of the sample's window.
func (s StatSample) Rate(n int64) float64 {
	d := s.WindowEnd.Sub(s.WindowStart).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(n) / d
}

// statSlice is the width of the slices in which StatSampleTake counts its
// window. Each slice is counted by statements of its own, so that none holds
// a snapshot (and with it the xmin horizon that every VACUUM of the hot queue
// table waits behind) for longer than it takes to read one slice: counting a
// whole window at full load in one statement holds it long enough for the
// queue table's dead space to pass 10 % (docs/operations/postgresql.md, "What holds back
// the hot table's VACUUMs").
const statSlice = time.Second

// StatSampleTake measures a sample over [from, to) at now, with queues logical
// queues. It does not store it.
func (db *DB) StatSampleTake(ctx context.Context, from, to, now time.Time, queues int) (StatSample, error) {
	start := time.Now()
	s := StatSample{SampledAt: now.UTC(), WindowStart: from.UTC(), WindowEnd: to.UTC(), BacklogPerQueue: make([]int64, queues)}
	// The window counts read the history partitions slice by slice, under
	// StatWindowPlan's settings, in one pipeline: one implicit transaction
	// whose statements PostgreSQL runs back to back, each with a snapshot
	// of its own (READ COMMITTED), dropped when the next one starts. No
	// snapshot waits on this process between them: on a saturated machine
	// the client's round trips inside a transaction had the last statement's
	// snapshot held 50–100 ms past its end.
	e2e := latencyHistogram{}
	steps := []step{func(tx dbsqlc.DBTX) error {
		if err := dbsqlc.New(tx).StatWindowPlan(ctx); err != nil {
			return fmt.Errorf("stat window plan: %w", err)
		}
		return nil
	}}
	for lo := from; lo.Before(to); lo = lo.Add(statSlice) {
		hi := lo.Add(statSlice)
		if hi.After(to) {
			hi = to
		}
		steps = append(steps, func(tx dbsqlc.DBTX) error {
			ing, err := dbsqlc.New(tx).MessageCountWindow(ctx, dbsqlc.MessageCountWindowParams{FromTime: lo, ToTime: hi})
			if err != nil {
				return fmt.Errorf("stat ingested: %w", err)
			}
			s.Ingested += ing.Ingested
			s.IngestedTotal = max(s.IngestedTotal, ing.IngestedTotal)
			return nil
		}, func(tx dbsqlc.DBTX) error {
			rows, err := dbsqlc.New(tx).AttemptHistogram(ctx, dbsqlc.AttemptHistogramParams{FromTime: lo, ToTime: hi})
			if err != nil {
				return fmt.Errorf("stat attempts: %w", err)
			}
			for _, r := range rows {
				if r.Success {
					s.Delivered += r.N
					e2e[r.Bucket] += r.N
				} else {
					s.Failed += r.N
				}
			}
			return nil
		})
	}
	if err := runPipeline(ctx, db.pool, steps...); err != nil {
		return s, unavailable(err)
	}
	s.E2EP50Ms, s.E2EP99Ms = e2e.percentile(0.5), e2e.percentile(0.99)
	if n := s.Delivered + s.Failed; n > 0 {
		s.ErrorRate = float64(s.Failed) / float64(n)
	}
	if err := db.statBacklog(ctx, &s, now, queues); err != nil {
		return s, err
	}
	var err error
	if s.DeadLettersTotal, err = db.q.DeadLetterCount(ctx); err != nil {
		return s, fmt.Errorf("stat dead letters: %w", unavailable(err))
	}
	s.QueryMs = float64(time.Since(start).Microseconds()) / 1000
	return s, nil
}

// latencyHistogram counts latencies in AttemptHistogram' buckets: bucket b holds
// [1.01^b, 1.01^(b+1)) ms.
type latencyHistogram map[int32]int64

// percentile returns the q-quantile (0 <= q <= 1) as PostgreSQL's
// percentile_cont would of the latencies, each taken as its bucket's
// geometric middle (within 0.5 % of it); 0 for an empty histogram.
func (h latencyHistogram) percentile(q float64) float64 {
	var n int64
	buckets := make([]int32, 0, len(h))
	for b, c := range h {
		buckets = append(buckets, b)
		n += c
	}
	if n == 0 {
		return 0
	}
	slices.Sort(buckets)
	// percentile_cont interpolates between the values of ranks floor(r) and
	// floor(r)+1 (0-based) of the sorted values.
	r := q * float64(n-1)
	lo := int64(math.Floor(r))
	valueAt := func(rank int64) float64 {
		var seen int64
		for _, b := range buckets {
			if seen += h[b]; rank < seen {
				return math.Pow(1.01, float64(b)+0.5)
			}
		}
		return math.Pow(1.01, float64(buckets[len(buckets)-1])+0.5)
	}
	v := valueAt(lo)
	if frac := r - float64(lo); frac > 0 {
		v += frac * (valueAt(lo+1) - v)
	}
	return v
}

// HistoryIndexesSummarize summarizes the block ranges added since the last
// call to the BRIN indexes of the history partitions holding [from, to), so
// that a stat sample over that window reads only its own ranges; it returns
// how many ranges it summarized. It waits at most lockTimeout for a partition
// that a VACUUM or ANALYZE holds, and then returns an error for which
// IsLockTimeout is true: the next call summarizes what this one left.
func (db *DB) HistoryIndexesSummarize(ctx context.Context, from, to time.Time, lockTimeout time.Duration) (int64, error) {
	// One pipeline (one implicit transaction): the summary's snapshot ends
	// with it, not after a round trip to this process for the COMMIT.
	var n int64
	err := runPipeline(ctx, db.pool, func(tx dbsqlc.DBTX) error {
		return dbsqlc.New(tx).PartitionIndexesLockTimeout(ctx, strconv.FormatInt(max(lockTimeout.Milliseconds(), 1), 10))
	}, func(tx dbsqlc.DBTX) error {
		var err error
		n, err = dbsqlc.New(tx).PartitionIndexesSummarize(ctx, dbsqlc.PartitionIndexesSummarizeParams{FromTime: from, ToTime: to})
		return err
	})
	if err != nil {
		if IsLockTimeout(err) {
			return 0, err
		}
		return 0, fmt.Errorf("summarize history indexes: %w", unavailable(err))
	}
	return n, nil
}

// IsLockTimeout reports whether err is PostgreSQL's lock_timeout expiring.
func IsLockTimeout(err error) bool {
	return isCode(err, "55P03") // lock_not_available
}

// statExactBacklog is the largest backlog counted exactly (one scan of
// deliveries); larger ones are estimated so that a sample stays cheap (the
// scan grows with the backlog, the estimate does not).
const statExactBacklog = 50_000

// statBacklog fills the backlog fields of s.
func (db *DB) statBacklog(ctx context.Context, s *StatSample, now time.Time, queues int) error {
	est, err := db.q.DeliveryBacklogEstimate(ctx)
	if err != nil {
		return fmt.Errorf("stat backlog estimate: %w", unavailable(err))
	}
	add := func(q int32, n int64) {
		if int(q) >= 0 && int(q) < queues {
			s.BacklogPerQueue[q] += n
		}
	}
	if est.Live > statExactBacklog {
		s.BacklogEstimated, s.BacklogTotal = true, est.Live
		if est.OldestUnix > 0 {
			s.OldestPendingAgeSeconds = max(0, now.Sub(time.UnixMicro(int64(est.OldestUnix*1e6))).Seconds())
		}
		percent := min(100, 100*float64(statExactBacklog)/float64(est.Live))
		rows, err := db.q.DeliveryBacklogSampled(ctx, percent)
		if err != nil {
			return fmt.Errorf("stat backlog sample: %w", unavailable(err))
		}
		var sampled int64
		for _, r := range rows {
			sampled += r.Pending
		}
		for _, r := range rows {
			add(r.Queue, int64(float64(r.Pending)/float64(max(sampled, 1))*float64(est.Live)))
		}
		return nil
	}
	rows, err := db.q.DeliveryBacklogByQueue(ctx)
	if err != nil {
		return fmt.Errorf("stat backlog: %w", unavailable(err))
	}
	var oldest time.Time
	for _, r := range rows {
		s.BacklogTotal += r.Pending
		add(r.Queue, r.Pending)
		if oldest.IsZero() || r.Oldest.Before(oldest) {
			oldest = r.Oldest
		}
	}
	if !oldest.IsZero() {
		s.OldestPendingAgeSeconds = max(0, now.Sub(oldest).Seconds())
	}
	return nil
}

// StatSampleInsert stores s (a second sample at the same instant is ignored).
func (db *DB) StatSampleInsert(ctx context.Context, s StatSample) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode stat sample: %w", err)
	}
	if err := db.q.StatSampleInsert(ctx, dbsqlc.StatSampleInsertParams{SampledAt: s.SampledAt, Data: data}); err != nil {
		return fmt.Errorf("insert stat sample: %w", unavailable(err))
	}
	return nil
}

// StatSamplesTrim deletes the samples taken before t and returns how many.
func (db *DB) StatSamplesTrim(ctx context.Context, t time.Time) (int64, error) {
	n, err := db.q.StatSampleTrim(ctx, t)
	if err != nil {
		return 0, fmt.Errorf("trim stat samples: %w", unavailable(err))
	}
	return n, nil
}

// StatSamplesSince returns the samples taken at or after since, oldest first.
func (db *DB) StatSamplesSince(ctx context.Context, since time.Time) ([]StatSample, error) {
	rows, err := db.q.StatSampleListSince(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("stat samples: %w", unavailable(err))
	}
	out := make([]StatSample, 0, len(rows))
	for _, r := range rows {
		s, err := decodeStatSample(r)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// StatSampleLatest returns the newest sample, or a hookrelay.ENOTFOUND error.
func (db *DB) StatSampleLatest(ctx context.Context) (StatSample, error) {
	r, err := db.q.StatSampleGetLatest(ctx)
	if err != nil {
		return StatSample{}, notFound(unavailableUnlessNoRows(err), "stat sample")
	}
	return decodeStatSample(r)
}

func decodeStatSample(r dbsqlc.StatSample) (StatSample, error) {
	var s StatSample
	if err := json.Unmarshal(r.Data, &s); err != nil {
		return s, fmt.Errorf("decode stat sample of %s: %w", r.SampledAt.Format(time.RFC3339), err)
	}
	s.SampledAt = r.SampledAt.UTC()
	return s, nil
}

// Stats are the platform's totals (GET /v1/stats). Counts over tables that can
// grow large stop at StatsCap (the *Capped fields report whether they did).
type Stats struct {
	Carriers            int64
	Merchants           int64
	EndpointsByStatus   map[string]int64
	PendingDeliveries   int64
	PendingCapped       bool
	DeadLetters         int64
	DeadLettersCapped   bool
	MessagesToday       int64
	MessagesTodayCapped bool
}

// StatsCap bounds the counts of Stats.
const StatsCap = 100000

// StatsGet counts the totals of Stats.
func (db *DB) StatsGet(ctx context.Context) (Stats, error) {
	s := Stats{EndpointsByStatus: map[string]int64{"enabled": 0, "disabled": 0, "deleted": 0}}
	var err error
	wrap := func(err error) (Stats, error) { return Stats{}, fmt.Errorf("stats: %w", unavailable(err)) }
	if s.Carriers, err = db.q.CarrierCount(ctx); err != nil {
		return wrap(err)
	}
	if s.Merchants, err = db.q.MerchantCount(ctx); err != nil {
		return wrap(err)
	}
	rows, err := db.q.EndpointCountByStatus(ctx)
	if err != nil {
		return wrap(err)
	}
	for _, r := range rows {
		s.EndpointsByStatus[r.Status] = r.N
	}
	if s.PendingDeliveries, err = db.q.DeliveryCountCapped(ctx, StatsCap); err != nil {
		return wrap(err)
	}
	if s.DeadLetters, err = db.q.DeadLetterCountCapped(ctx, dbsqlc.DeadLetterCountCappedParams{Cap: StatsCap}); err != nil {
		return wrap(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	if s.MessagesToday, err = db.q.MessageCountSinceCapped(ctx, dbsqlc.MessageCountSinceCappedParams{Since: today, Cap: StatsCap}); err != nil {
		return wrap(err)
	}
	s.PendingCapped, s.DeadLettersCapped, s.MessagesTodayCapped = s.PendingDeliveries >= StatsCap, s.DeadLetters >= StatsCap, s.MessagesToday >= StatsCap
	return s, nil
}
