package ingest

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/httperr"
)

// Defaults of WatchConfig.
const (
	DefaultRefusalsPerMinute = 20
	DefaultRefusalsPerDay    = 1000
	DefaultCarrierLabels     = 100
)

// LatencyBounds are the upper bounds (seconds) of the buckets of the
// callbacks' answer latency that the carrier statistics keep (carrier_stats)
// and the metrics export; one more bucket takes what is slower.
var LatencyBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// WatchConfig configures a Watch. Zero fields get the defaults named.
type WatchConfig struct {
	// PerMinute and PerDay bound the refusals of one carrier stored in the
	// refusal log per minute and per day (UTC); those beyond are counted,
	// one row per reason and minute (db.CarrierRefusal.Dropped), without
	// their excerpts. Refusals whose carrier is not known share one bound.
	// Defaults DefaultRefusalsPerMinute (20) and DefaultRefusalsPerDay
	// (1000).
	PerMinute, PerDay int
	// FlushInterval is how often the buffered refusals are written (one
	// statement); a full batch is written at once. Default 1s.
	FlushInterval time.Duration
	// StatsInterval is how often the counts of accepted and refused
	// callbacks are added to the carrier statistics. Default 10s.
	StatsInterval time.Duration
	// MaxPending bounds the refusals buffered between writes; beyond, they
	// are counted only. Default 1000.
	MaxPending int
	// CarrierLabels is how many carriers get a label of their own in the
	// metrics (the first seen by the process); the others share "other".
	// Default DefaultCarrierLabels (100).
	CarrierLabels int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with every zero field set to its default.
func (c WatchConfig) WithDefaults() WatchConfig {
	c.PerMinute = cmp.Or(c.PerMinute, DefaultRefusalsPerMinute)
	c.PerDay = cmp.Or(c.PerDay, DefaultRefusalsPerDay)
	c.FlushInterval = cmp.Or(c.FlushInterval, time.Second)
	c.StatsInterval = cmp.Or(c.StatsInterval, 10*time.Second)
	c.MaxPending = cmp.Or(c.MaxPending, 1000)
	c.CarrierLabels = cmp.Or(c.CarrierLabels, DefaultCarrierLabels)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// flushBatch is the buffered refusals that wake the writer before its
// interval.
const flushBatch = 100

// Watch watches the carriers' callbacks: it counts those accepted and
// refused per carrier (metrics, and the carrier statistics every
// StatsInterval) and keeps the refusal log, in memory until it writes a
// batch in one statement. The request path only takes a lock to count and
// append: it never waits for the database, and a flood of refusals costs
// one row per reason and minute beyond the caps.
type Watch struct {
	cfg    WatchConfig
	store  *db.DB
	logger *slog.Logger
	m      *watchMetrics
	wake   chan struct{}

	mu       sync.Mutex // guards everything below
	pending  []db.CarrierRefusal
	caps     map[int64]*refusalCap
	drops    map[dropKey]*db.CarrierRefusal
	stats    map[statKey]*db.CarrierStat
	carriers map[int64]*carrierMetrics
	other    *carrierMetrics // the carriers beyond CarrierLabels
}

// refusalCap counts a carrier's refusals stored in the current minute and
// day.
type refusalCap struct {
	minute, day     int64 // unix minute and day counted
	inMinute, inDay int
}

type dropKey struct {
	carrier int64
	reason  hookrelay.Reason
	minute  int64
}

type statKey struct {
	carrier int64
	minute  int64
}

// NewWatch returns a Watch writing to store; reg receives its metrics (may
// be nil).
func NewWatch(cfg WatchConfig, store *db.DB, logger *slog.Logger, reg prometheus.Registerer) *Watch {
	return &Watch{
		cfg: cfg.WithDefaults(), store: store, logger: logger, m: newWatchMetrics(reg),
		wake: make(chan struct{}, 1), caps: map[int64]*refusalCap{}, drops: map[dropKey]*db.CarrierRefusal{},
		stats: map[statKey]*db.CarrierStat{}, carriers: map[int64]*carrierMetrics{},
	}
}

// admits reports whether a refusal of carrier at now would be stored, and
// counts it when take; w.mu must be held.
func (w *Watch) admits(carrier int64, now time.Time, take bool) bool {
	c := w.caps[carrier]
	if c == nil {
		c = &refusalCap{}
		w.caps[carrier] = c
	}
	minute, day := now.Unix()/60, now.Unix()/86400
	if c.minute != minute {
		c.minute, c.inMinute = minute, 0
	}
	if c.day != day {
		c.day, c.inDay = day, 0
	}
	if c.inMinute >= w.cfg.PerMinute || c.inDay >= w.cfg.PerDay || len(w.pending) >= w.cfg.MaxPending {
		return false
	}
	if take {
		c.inMinute++
		c.inDay++
	}
	return true
}

// WithBody returns err with an excerpt of the refused callback's body for
// the log when err is not nil and the log would store a refusal of carrier
// now; otherwise err. Call it before the body's buffer is reused.
func (w *Watch) WithBody(carrier int64, err error, body []byte) error {
	if err == nil {
		return nil
	}
	w.mu.Lock()
	ok := w.admits(carrier, w.cfg.Now(), false)
	w.mu.Unlock()
	if !ok {
		return err
	}
	return &withBody{err: err, excerpt: TextSafe(string(body[:min(len(body), ExcerptBodyBytes)]), ExcerptBodyBytes), size: len(body)}
}

// Refused records a callback of carrier (0: not known) refused with err:
// counted, and logged with its status, reason, message, the excerpt of its
// headers and the body excerpt WithBody attached, unless over the caps.
func (w *Watch) Refused(carrier int64, header http.Header, err error) {
	a := httperr.AnswerFor(err)
	reason := hookrelay.ReasonOf(err)
	now := w.cfg.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	cm := w.carrierMetrics(carrier)
	cm.outcome(reason).Inc()
	st := w.stat(carrier, now)
	if st.Refused == nil {
		st.Refused = map[string]int64{}
	}
	st.Refused[string(reason)]++
	st.LastAt = now
	if !w.admits(carrier, now, true) {
		k := dropKey{carrier: carrier, reason: reason, minute: now.Unix() / 60}
		d := w.drops[k]
		if d == nil {
			d = &db.CarrierRefusal{CarrierID: carrier, Reason: string(reason)}
			w.drops[k] = d
		}
		d.Dropped++
		d.ReceivedAt, d.Status = now, a.Status
		w.m.notLogged.Inc()
		return
	}
	excerpt, size := bodyOf(err)
	w.pending = append(w.pending, db.CarrierRefusal{
		CarrierID: carrier, ReceivedAt: now, Status: a.Status, Reason: string(reason),
		Message: TextSafe(a.Message, 1024), Headers: ExcerptHeaders(header), BodyExcerpt: excerpt, BodySize: size,
	})
	if len(w.pending) >= flushBatch {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Accepted counts an accepted callback of carrier answered in took.
func (w *Watch) Accepted(carrier int64, took time.Duration) {
	now := w.cfg.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	cm := w.carrierMetrics(carrier)
	cm.accepted.Inc()
	cm.latency.Observe(took.Seconds())
	st := w.stat(carrier, now)
	st.Accepted++
	if st.Latency == nil {
		st.Latency = make([]int64, len(LatencyBounds)+1)
	}
	st.Latency[latencyBucket(took.Seconds())]++
	st.LastAt = now
}

// latencyBucket returns the index of the bucket of LatencyBounds that takes
// seconds.
func latencyBucket(seconds float64) int {
	for i, b := range LatencyBounds {
		if seconds <= b {
			return i
		}
	}
	return len(LatencyBounds)
}

// stat returns the statistics row of carrier's minute of now; w.mu must be
// held.
func (w *Watch) stat(carrier int64, now time.Time) *db.CarrierStat {
	k := statKey{carrier: carrier, minute: now.Unix() / 60}
	st := w.stats[k]
	if st == nil {
		st = &db.CarrierStat{CarrierID: carrier, Minute: time.Unix(k.minute*60, 0).UTC()}
		w.stats[k] = st
	}
	return st
}

// Run writes the refusal log every FlushInterval (sooner when a batch is
// full) and the statistics every StatsInterval until ctx ends, then writes
// what is left.
func (w *Watch) Run(ctx context.Context) {
	flush := time.NewTicker(w.cfg.FlushInterval)
	defer flush.Stop()
	stats := time.NewTicker(w.cfg.StatsInterval)
	defer stats.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			w.log(w.Flush(final, true))
			cancel()
			return
		case <-flush.C:
			w.log(w.flushRefusals(ctx, false))
		case <-w.wake:
			w.log(w.flushRefusals(ctx, false))
		case <-stats.C:
			w.log(w.flushStats(ctx))
		}
	}
}

func (w *Watch) log(err error) {
	if err != nil && w.logger != nil {
		w.logger.Warn("carrier watch: could not write; these counts and refusals are lost", "error", err)
	}
}

// Flush writes the buffered refusals and the statistics now; with all, the
// counts of refusals beyond the caps of the current minute too (else only
// those of minutes past).
func (w *Watch) Flush(ctx context.Context, all bool) error {
	err := w.flushRefusals(ctx, all)
	if serr := w.flushStats(ctx); err == nil {
		err = serr
	}
	return err
}

func (w *Watch) flushRefusals(ctx context.Context, all bool) error {
	w.mu.Lock()
	rows := w.pending
	w.pending = nil
	minute := w.cfg.Now().Unix() / 60
	for k, d := range w.drops {
		if all || k.minute < minute {
			d.Message = fmt.Sprintf("%d more refusals (%s) in this minute were counted, not stored: the log keeps at most %d of a carrier a minute and %d a day",
				d.Dropped, d.Reason, w.cfg.PerMinute, w.cfg.PerDay)
			rows = append(rows, *d)
			delete(w.drops, k)
		}
	}
	w.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	if err := w.store.CarrierRefusalInsertMany(ctx, rows); err != nil {
		w.m.lost.Add(float64(len(rows)))
		return err
	}
	w.m.logged.Add(float64(len(rows)))
	return nil
}

func (w *Watch) flushStats(ctx context.Context) error {
	w.mu.Lock()
	stats := make([]db.CarrierStat, 0, len(w.stats))
	for _, st := range w.stats {
		stats = append(stats, *st)
	}
	clear(w.stats)
	w.mu.Unlock()
	if len(stats) == 0 {
		return nil
	}
	return w.store.CarrierStatsAdd(ctx, stats)
}

// carrierMetrics are a carrier's collectors, resolved once.
type carrierMetrics struct {
	vec      *prometheus.CounterVec
	label    string
	accepted prometheus.Counter
	latency  prometheus.Observer
	outcomes map[hookrelay.Reason]prometheus.Counter
}

func (c *carrierMetrics) outcome(r hookrelay.Reason) prometheus.Counter {
	o := c.outcomes[r]
	if o == nil {
		o = c.vec.WithLabelValues(c.label, string(r))
		c.outcomes[r] = o
	}
	return o
}

// carrierMetrics returns carrier's collectors: its id for a label while
// fewer than CarrierLabels carriers have one, else "other"; "unknown" for
// carrier 0. w.mu must be held.
func (w *Watch) carrierMetrics(carrier int64) *carrierMetrics {
	if cm := w.carriers[carrier]; cm != nil {
		return cm
	}
	if carrier != 0 && len(w.carriers) >= w.cfg.CarrierLabels && w.other != nil {
		return w.other
	}
	label := strconv.FormatInt(carrier, 10)
	switch {
	case carrier == 0:
		label = "unknown"
	case len(w.carriers) >= w.cfg.CarrierLabels:
		label = "other"
	}
	cm := &carrierMetrics{
		vec: w.m.callbacks, label: label, accepted: w.m.callbacks.WithLabelValues(label, "accepted"),
		latency: w.m.latency.WithLabelValues(label), outcomes: map[hookrelay.Reason]prometheus.Counter{},
	}
	if label == "other" {
		w.other = cm
	} else {
		w.carriers[carrier] = cm
	}
	return cm
}

type watchMetrics struct {
	callbacks *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	logged    prometheus.Counter
	notLogged prometheus.Counter
	lost      prometheus.Counter
}

func newWatchMetrics(reg prometheus.Registerer) *watchMetrics {
	m := &watchMetrics{
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrelay_carrier_callbacks_total",
			Help: "Callbacks answered per carrier (its id; \"other\" beyond the labelled carriers, \"unknown\" when no key identified it) and outcome (accepted, or the refusal's reason).",
		}, []string{"carrier", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hookrelay_carrier_callback_seconds", Help: "Answer latency of the accepted callbacks per carrier (as hookrelay_carrier_callbacks_total labels it).",
			Buckets: LatencyBounds,
		}, []string{"carrier"}),
		logged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_carrier_refusals_logged_total", Help: "Rows written to the refusal log (refusals, and counts of those beyond its caps).",
		}),
		notLogged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_carrier_refusals_not_logged_total", Help: "Refusals beyond the refusal log's caps: counted in the log, without their excerpts.",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_carrier_refusals_lost_total", Help: "Rows of the refusal log that could not be written (the database refused the batch).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.callbacks, m.latency, m.logged, m.notLogged, m.lost)
	}
	return m
}
