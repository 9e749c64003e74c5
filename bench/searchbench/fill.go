package searchbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
)

// FillReport is how long each step of a fill took.
type FillReport struct {
	// Load: the day partitions written; Attach: attached (their indexes
	// built) and vacuumed; Rest: the dead letters, the queue, ANALYZE.
	Load, Attach, Rest, Total time.Duration
	Days                      []string
	Bytes                     int64 // the database's size after the fill
}

// Fill writes s into the migrated, empty database of pool with workers
// statements at a time. Each day partition of messages and
// delivery_attempts is created, filled and only then attached, as
// hookrelay_ensure_partitions creates and attaches a day: the partitioned
// indexes are then built once per day, sorted, instead of entry by entry,
// and under wal_level=minimal a table filled in the transaction that
// created it writes no WAL. Finish does the rest.
func Fill(ctx context.Context, pool *pgxpool.Pool, s Shape, workers int, log io.Writer) (FillReport, error) {
	var rep FillReport
	t0 := time.Now()
	if err := fillConfig(ctx, pool, s); err != nil {
		return rep, err
	}
	days := s.days()
	for _, d := range days {
		rep.Days = append(rep.Days, d.Format("2006-01-02"))
		for _, t := range []string{"messages", "delivery_attempts"} {
			if err := dropEmptyPartition(ctx, pool, partName(t, d)); err != nil {
				return rep, err
			}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, d := range days {
		for _, load := range []func(context.Context, *pgxpool.Pool, time.Time) error{s.loadMessages, s.loadAttempts} {
			g.Go(func() error {
				t := time.Now()
				err := load(gctx, pool, d)
				fmt.Fprintf(log, "loaded a part of %s in %s\n", d.Format("2006-01-02"), time.Since(t).Round(time.Second))
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	rep.Load = time.Since(t0)
	fin, err := Finish(ctx, pool, s, workers, log)
	rep.Attach, rep.Rest, rep.Bytes = fin.Attach, fin.Rest, fin.Bytes
	rep.Total = time.Since(t0)
	return rep, err
}

// Finish is the end of a fill, after the day partitions were loaded (and
// where an interrupted fill resumes): it attaches the partitions not yet
// attached, messages' and delivery_attempts' side by side (ATTACH locks
// the parent), each VACUUM ANALYZEd once attached; then it writes the
// dead letters and the queue, and analyzes the rest.
func Finish(ctx context.Context, pool *pgxpool.Pool, s Shape, workers int, log io.Writer) (FillReport, error) {
	var rep FillReport
	t := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for _, tb := range []string{"messages", "delivery_attempts"} {
		g.Go(func() error {
			for _, d := range s.days() {
				part := partName(tb, d)
				var attached bool
				if err := pool.QueryRow(gctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits
                    WHERE inhrelid = to_regclass($1))`, part).Scan(&attached); err != nil {
					return err
				}
				ta := time.Now()
				if !attached {
					if _, err := pool.Exec(gctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)`,
						tb, part, quoteTime(d), quoteTime(d.Add(24*time.Hour)))); err != nil {
						return fmt.Errorf("attach %s: %w", part, err)
					}
				}
				// Again when resuming: a VACUUM of a vacuumed table skips
				// its all-visible pages.
				tv := time.Now()
				if _, err := pool.Exec(gctx, "VACUUM (ANALYZE) "+part); err != nil {
					return fmt.Errorf("vacuum %s: %w", part, err)
				}
				fmt.Fprintf(log, "attached %s (its indexes built) in %s, vacuumed in %s\n", part,
					tv.Sub(ta).Round(time.Second), time.Since(tv).Round(time.Second))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	rep.Attach = time.Since(t)
	t = time.Now()
	if err := s.loadRest(ctx, pool); err != nil {
		return rep, err
	}
	for _, tb := range []string{"dead_letters", "deliveries", "carriers", "merchants", "endpoints"} {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+tb); err != nil {
			return rep, fmt.Errorf("vacuum %s: %w", tb, err)
		}
	}
	// The parents' statistics are the planner's estimate for a plan over
	// several partitions; ANALYZE of a partitioned table samples its
	// partitions (autovacuum never does it).
	if _, err := pool.Exec(ctx, "ANALYZE messages, delivery_attempts"); err != nil {
		return rep, fmt.Errorf("analyze parents: %w", err)
	}
	rep.Rest = time.Since(t)
	err := pool.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&rep.Bytes)
	return rep, err
}

// days are the UTC days the window touches.
func (s Shape) days() []time.Time {
	var out []time.Time
	for d := s.Start().Truncate(24 * time.Hour); d.Before(s.End); d = d.Add(24 * time.Hour) {
		out = append(out, d)
	}
	return out
}

func partName(table string, day time.Time) string {
	return table + "_p" + day.Format("20060102")
}

func quoteTime(t time.Time) string { return "'" + t.UTC().Format(time.RFC3339Nano) + "'" }

// dropEmptyPartition drops a day partition the migrations created, which
// must still be empty: a fill never overwrites data.
func dropEmptyPartition(ctx context.Context, pool *pgxpool.Pool, part string) error {
	var exists, hasRows bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, part).Scan(&exists); err != nil || !exists {
		return err
	}
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s)`, part)).Scan(&hasRows); err != nil {
		return err
	}
	if hasRows {
		return fmt.Errorf("%s holds rows: fill an empty database", part)
	}
	_, err := pool.Exec(ctx, "DROP TABLE "+part)
	return err
}

// span is the range of message numbers n whose received_at may fall in
// [lo, hi) widened by slack seconds on the left, clipped to the messages.
func (s Shape) span(lo, hi time.Time, slack float64) (int64, int64) {
	step := s.stepSeconds()
	a := int64(math.Floor((lo.Sub(s.Start()).Seconds()-slack)/step)) - 2
	b := int64(math.Ceil(hi.Sub(s.Start()).Seconds()/step)) + 2
	return max(a, 0), min(b, s.Messages-1)
}

// createPart starts a transaction creating day partition part of table as
// hookrelay_ensure_partitions does (not attached yet).
func createPart(ctx context.Context, pool *pgxpool.Pool, table, part string) (pgx.Tx, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`, part, table)); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT hookrelay_history_statistics($1)`, part); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

func (s Shape) loadMessages(ctx context.Context, pool *pgxpool.Pool, day time.Time) error {
	part := partName("messages", day)
	tx, err := createPart(ctx, pool, "messages", part)
	if err != nil {
		return fmt.Errorf("create %s: %w", part, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	lo, hi := day, day.Add(24*time.Hour)
	a, b := s.span(lo, hi, 0)
	q := fmt.Sprintf(`INSERT INTO %s (id, received_at, carrier_id, event_type, ordering_key, merchant_ref, queue,
        idempotency_key, payload, payload_key, payload_size, payload_sha256, deliveries)
SELECT p.id, p.received_at, p.carrier_id, p.event_type, p.ordering_key, 'm' || p.merchant_id, p.queue,
       NULL, p.payload, NULL, length(p.payload), sha256(p.payload), 1
FROM (SELECT r.*, %s AS payload FROM (%s) r) p
WHERE p.received_at >= $4 AND p.received_at < $5`, part, s.payloadSQL("r"), s.rowsSQL())
	if _, err := tx.Exec(ctx, q, s.Start(), a, b, lo, hi); err != nil {
		return fmt.Errorf("fill %s: %w", part, err)
	}
	return tx.Commit(ctx)
}

func (s Shape) loadAttempts(ctx context.Context, pool *pgxpool.Pool, day time.Time) error {
	part := partName("delivery_attempts", day)
	tx, err := createPart(ctx, pool, "delivery_attempts", part)
	if err != nil {
		return fmt.Errorf("create %s: %w", part, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	lo, hi := day, day.Add(24*time.Hour)
	a, b := s.span(lo, hi, 1) // attempted up to 0.45 s after arrival
	q := fmt.Sprintf(`INSERT INTO %s (delivery_id, message_id, message_received_at, endpoint_id, attempt,
        attempted_at, outcome, status_code, latency_ms, error)
SELECT r.id, r.id, r.received_at, r.endpoint_id, 1, r.attempted_at,
       CASE WHEN r.dead THEN 'failed' ELSE 'success' END, CASE WHEN r.dead THEN 503 ELSE 200 END,
       20 + r.h %% 300, CASE WHEN r.dead THEN 'HTTP 503' ELSE '' END
FROM (%s) r
WHERE NOT r.pending AND r.attempted_at >= $4 AND r.attempted_at < $5`, part, s.rowsSQL())
	if _, err := tx.Exec(ctx, q, s.Start(), a, b, lo, hi); err != nil {
		return fmt.Errorf("fill %s: %w", part, err)
	}
	return tx.Commit(ctx)
}

// loadRest writes the dead letters (a dead delivery's one failed attempt
// is in delivery_attempts), the queued deliveries of the newest messages,
// and moves the sequences past the ids used.
func (s Shape) loadRest(ctx context.Context, pool *pgxpool.Pool) error {
	batch := &pgx.Batch{}
	batch.Queue(fmt.Sprintf(`INSERT INTO dead_letters (id, message_id, message_received_at, endpoint_id, merchant_id,
        carrier_id, queue, ordering_key, event_type, attempts, last_status, last_error, created_at)
SELECT r.id, r.id, r.received_at, r.endpoint_id, r.merchant_id, r.carrier_id, r.queue, r.ordering_key,
       r.event_type, 1, 503, 'HTTP 503', r.attempted_at
FROM (%s) r WHERE r.dead AND NOT r.pending`, s.rowsOver(fmt.Sprintf("generate_series($2::bigint, $3::bigint, %d)", s.DeadEvery))),
		s.Start(), s.DeadEvery-1, s.Messages-1)
	batch.Queue(fmt.Sprintf(`INSERT INTO deliveries (id, queue, endpoint_id, ordering_key, message_id,
        message_received_at, visible_at, created_at)
SELECT r.id, r.queue, r.endpoint_id, r.ordering_key, r.id, r.received_at, now(), r.received_at
FROM (%s) r`, s.rowsSQL()), s.Start(), s.Messages-s.Pending, s.Messages-1)
	batch.Queue(`SELECT setval('messages_id_seq', $1), setval('deliveries_id_seq', $1)`, s.Messages+1)
	if err := pool.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("dead letters and queue: %w", err)
	}
	return nil
}
