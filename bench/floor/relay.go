package floor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/bench/load"
	"github.com/hookrelay/hookrelay/storage"
)

// Environment of the relay child.
const (
	envMode    = "FLOOR_MODE"
	envDB      = "FLOOR_DATABASE_URL"
	envSink    = "FLOOR_SINK_URL"
	envKey     = "FLOOR_KEY" // HMAC key, base64
	envWorkers = "FLOOR_WORKERS"
	envData    = "FLOOR_DATA_DIR"
	envPaused  = "FLOOR_PAUSED" // "1": no claims until POST /floor/resume
	envBatch   = "FLOOR_BATCH"  // most rows per claim; 0 or unset: the free slots
	envRate    = "FLOOR_RATE"   // most rows claimed per second; 0 or unset: no cap
)

// largeBytes is where a body leaves the queue row for the object store
// (hookrelay's default: payloads over 8 KB).
const largeBytes = 8 << 10

// runRelay serves POST /v1/callbacks on a free loopback port, prints the
// address on stdout and relays until ctx ends.
func runRelay(ctx context.Context, getenv func(string) string) error {
	key, err := base64.StdEncoding.DecodeString(getenv(envKey))
	if err != nil {
		return fmt.Errorf("%s: %w", envKey, err)
	}
	workers, err := strconv.Atoi(getenv(envWorkers))
	if err != nil || workers <= 0 {
		return fmt.Errorf("%s must be a positive number", envWorkers)
	}
	batch := 0
	if v := getenv(envBatch); v != "" {
		if batch, err = strconv.Atoi(v); err != nil || batch < 0 {
			return fmt.Errorf("%s must be a number of rows", envBatch)
		}
	}
	rate := 0.0
	if v := getenv(envRate); v != "" {
		if rate, err = strconv.ParseFloat(v, 64); err != nil || rate < 0 {
			return fmt.Errorf("%s must be a rate per second", envRate)
		}
	}
	d := newDeliverer(getenv(envSink), key, workers)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	var q queue
	switch getenv(envMode) {
	case "http":
		q = newMemQueue(ctx, d, workers)
	case "pg", "pg-history":
		resume := make(chan struct{})
		var once sync.Once
		start := func() { once.Do(func() { close(resume) }) }
		if getenv(envPaused) != "1" {
			start()
		}
		e.POST("/floor/resume", func(c echo.Context) error {
			start()
			return c.NoContent(http.StatusNoContent)
		})
		pq, err := newPGQueue(ctx, pgQueueConfig{
			url: getenv(envDB), dataDir: getenv(envData), workers: workers, batch: batch, rate: rate,
			history: getenv(envMode) == "pg-history", resume: resume,
		}, d)
		if err != nil {
			return err
		}
		defer pq.close()
		e.GET("/floor/claims", func(c echo.Context) error { return c.JSON(http.StatusOK, pq.claims.summary()) })
		q = pq
	default:
		return fmt.Errorf("%s must be pg, pg-history or http", envMode)
	}

	e.POST("/v1/callbacks", func(c echo.Context) error {
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, 1<<20))
		if err != nil {
			return c.String(http.StatusBadRequest, err.Error())
		}
		if err := q.enqueue(c.Request().Context(), body); err != nil {
			return c.String(http.StatusServiceUnavailable, err.Error())
		}
		return c.NoContent(http.StatusAccepted)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	fmt.Println(ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// queue is the relay's store between accepting and delivering.
type queue interface {
	// enqueue returns once body is as safe as the queue makes it.
	enqueue(ctx context.Context, body []byte) error
}

// deliverer signs and POSTs bodies to the sink's endpoint 0.
type deliverer struct {
	client *retryablehttp.Client
	url    string
	key    []byte
	seq    atomic.Int64
}

func newDeliverer(sinkURL string, key []byte, conns int) *deliverer {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryMax = 2
	c.HTTPClient = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns * 2,
			MaxIdleConnsPerHost: conns * 2,
			IdleConnTimeout:     90 * time.Second,
		},
	}
	return &deliverer{client: c, url: sinkURL + "/e/0", key: key}
}

// deliver sends one body with Standard Webhooks headers; a non-2xx answer is
// an error.
func (d *deliverer) deliver(ctx context.Context, id int64, body []byte) error {
	msgID := "msg_" + strconv.FormatInt(id, 10)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, d.url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", load.Sign(d.key, msgID, ts, body))
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// memQueue hands bodies to delivery workers through a channel.
type memQueue struct {
	jobs chan []byte
}

func newMemQueue(ctx context.Context, d *deliverer, workers int) *memQueue {
	q := &memQueue{jobs: make(chan []byte, 1<<16)}
	for range workers {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case body := <-q.jobs:
					_ = d.deliver(ctx, d.seq.Add(1), body)
				}
			}
		}()
	}
	return q
}

func (q *memQueue) enqueue(ctx context.Context, body []byte) error {
	select {
	case q.jobs <- body:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pgQueue is the durable queue: one table, group-committed inserts, leased
// claims, batched deletes. With history, the body lives in a day-partitioned
// message table (the queue row refers to it, the claim joins it) and every
// delete appends an attempt row to a day-partitioned attempt table: the least
// hookrelay's history keeps (a message and its attempts stay readable for
// the retention period after delivery).
type pgQueue struct {
	sql      statements
	ingest   *pgxpool.Pool // synchronous commit: the 202 follows the commit
	dispatch *pgxpool.Pool // asynchronous commit: a lost claim or delete is redelivered
	store    *storage.Store
	embedded *storage.Embedded
	in       chan pendingRow
	objects  atomic.Int64
	claims   claimTimes
}

// pgQueueConfig configures a pgQueue.
type pgQueueConfig struct {
	url, dataDir string
	workers      int           // deliveries in flight at most
	batch        int           // rows per claim at most; 0: the free slots
	rate         float64       // rows claimed per second at most; 0: no cap
	history      bool          // -mode pg-history
	resume       chan struct{} // no claim before it is closed
}

// claimTimes records every claim's round trip: from sending the statement
// on a connection already held to reading its last row, as hookrelay's
// hookrelay_dispatch_claim_seconds does (the wait for a pool connection
// is left out of both).
type claimTimes struct {
	mu    sync.Mutex
	took  []time.Duration
	rows  int64
	most  int
	empty int64
	pings []time.Duration // SELECT 1 round trips, see pingLoop
}

func (c *claimTimes) add(took time.Duration, rows int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rows == 0 {
		c.empty++
		return
	}
	c.took = append(c.took, took)
	c.rows += int64(rows)
	c.most = max(c.most, rows)
}

func (c *claimTimes) addPing(took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pings = append(c.pings, took)
}

// claimSummary is what GET /floor/claims answers: the claims that leased
// at least one row (claims that found nothing are only counted: an idle
// relay's empty polls say nothing about a claim under load).
type claimSummary struct {
	Claims      int     `json:"claims"`
	Empty       int64   `json:"empty"`
	RowsPerCall float64 `json:"rows_per_claim"`
	MostRows    int     `json:"most_rows"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	// SELECT 1 round trips over the same span (pingLoop): what any
	// statement waits on this machine, whatever its own work.
	Pings     int     `json:"select1"`
	PingP50ms float64 `json:"select1_p50_ms"`
	PingP99ms float64 `json:"select1_p99_ms"`
	PingMaxMs float64 `json:"select1_max_ms"`
}

func (c *claimTimes) summary() claimSummary {
	c.mu.Lock()
	took, pings := slices.Clone(c.took), slices.Clone(c.pings)
	s := claimSummary{Claims: len(took), Empty: c.empty, MostRows: c.most, Pings: len(pings)}
	if len(took) > 0 {
		s.RowsPerCall = round(float64(c.rows) / float64(len(took)))
	}
	c.mu.Unlock()
	slices.Sort(took)
	s.P50ms, s.P99ms, s.MaxMs = quantileMS(took, 0.50), quantileMS(took, 0.99), quantileMS(took, 1)
	slices.Sort(pings)
	s.PingP50ms, s.PingP99ms, s.PingMaxMs = quantileMS(pings, 0.50), quantileMS(pings, 0.99), quantileMS(pings, 1)
	return s
}

type pendingRow struct {
	body []byte // nil when ref is set
	ref  string // object key of a large body
	done chan error
}

const pgSchema = `
DROP TABLE IF EXISTS floor_queue;
CREATE TABLE floor_queue (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body         bytea,
    ref          text,
    leased_until timestamptz
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 10000,
        autovacuum_vacuum_cost_delay = 0);`

// historySchema replaces the queue table of pgSchema for -mode pg-history: the
// queue row keeps a reference to its message. Each history table has the one
// index its readers need (a message by id; a delivery's attempts); the day
// partitions are yesterday, today and tomorrow, whatever the run crosses.
const historySchema = `
DROP TABLE IF EXISTS floor_queue, floor_messages, floor_attempts;
DROP SEQUENCE IF EXISTS floor_message_ids;
CREATE SEQUENCE floor_message_ids CACHE 100;
CREATE TABLE floor_queue (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id   bigint NOT NULL,
    received_at  timestamptz NOT NULL,
    leased_until timestamptz
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 10000,
        autovacuum_vacuum_cost_delay = 0);
CREATE TABLE floor_messages (
    id          bigint NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    body        bytea,
    ref         text,
    PRIMARY KEY (id, received_at)
) PARTITION BY RANGE (received_at);
CREATE TABLE floor_attempts (
    queue_id     bigint NOT NULL,
    message_id   bigint NOT NULL,
    received_at  timestamptz NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now(),
    status       integer NOT NULL
) PARTITION BY RANGE (attempted_at);
CREATE INDEX ON floor_attempts (queue_id);
DO $$
DECLARE d date;
BEGIN
    FOR i IN -1..1 LOOP
        d := current_date + i;
        EXECUTE format('CREATE TABLE %I PARTITION OF floor_messages FOR VALUES FROM (%L) TO (%L)',
                       'floor_messages_' || to_char(d, 'YYYYMMDD'), d, d + 1);
        EXECUTE format('CREATE TABLE %I PARTITION OF floor_attempts FOR VALUES FROM (%L) TO (%L)',
                       'floor_attempts_' || to_char(d, 'YYYYMMDD'), d, d + 1);
    END LOOP;
END $$;`

// The statements of -mode pg-history, in the roles of the plain ones.
const (
	historyInsertSQL = `
WITH m AS (
    INSERT INTO floor_messages (id, body, ref)
    SELECT nextval('floor_message_ids'), u.body, u.ref FROM unnest($1::bytea[], $2::text[]) AS u(body, ref)
    RETURNING id, received_at)
INSERT INTO floor_queue (message_id, received_at) SELECT id, received_at FROM m`
	historyClaimSQL = `
WITH c AS (
    UPDATE floor_queue q SET leased_until = now() + interval '30 seconds'
    FROM (SELECT id FROM floor_queue
          WHERE id > $2 AND (leased_until IS NULL OR leased_until < now())
          ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) c
    WHERE q.id = c.id
    RETURNING q.id, q.message_id, q.received_at)
SELECT c.id, m.body, m.ref FROM c
JOIN floor_messages m ON m.id = c.message_id AND m.received_at = c.received_at`
	historyDeleteSQL = `
WITH d AS (DELETE FROM floor_queue WHERE id = ANY($1) RETURNING id, message_id, received_at)
INSERT INTO floor_attempts (queue_id, message_id, received_at, status)
SELECT id, message_id, received_at, 200 FROM d`
)

// claimSQL leases up to $1 rows after the cursor $2, in id order. The cursor
// keeps claims off the front of the primary key, where the deleted rows'
// index entries wait for VACUUM and the rows in flight are; it goes back to 0
// every cursorReset so that rows whose lease ran out are claimed again.
const claimSQL = `
UPDATE floor_queue q SET leased_until = now() + interval '30 seconds'
FROM (SELECT id FROM floor_queue
      WHERE id > $2 AND (leased_until IS NULL OR leased_until < now())
      ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) c
WHERE q.id = c.id
RETURNING q.id, q.body, q.ref`

// statements are one mode's SQL.
type statements struct {
	schema, insert, claim, delete string
}

var (
	plainSQL = statements{
		schema: pgSchema,
		insert: `INSERT INTO floor_queue (body, ref) SELECT * FROM unnest($1::bytea[], $2::text[])`,
		claim:  claimSQL,
		delete: `DELETE FROM floor_queue WHERE id = ANY($1)`,
	}
	historySQL = statements{schema: historySchema, insert: historyInsertSQL, claim: historyClaimSQL, delete: historyDeleteSQL}
)

// cursorReset is how often the claim cursor goes back to the start.
const cursorReset = 5 * time.Second

// vacuumEvery is how often the relay vacuums its table, as hookrelay's
// maintenance role does with the hot queue table.
const vacuumEvery = 500 * time.Millisecond

func newPGQueue(ctx context.Context, c pgQueueConfig, d *deliverer) (*pgQueue, error) {
	open := func(async bool) (*pgxpool.Pool, error) {
		cfg, err := pgxpool.ParseConfig(c.url)
		if err != nil {
			return nil, err
		}
		cfg.MaxConns = 8
		if async {
			cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
		}
		return pgxpool.NewWithConfig(ctx, cfg)
	}
	q := &pgQueue{in: make(chan pendingRow, 4096), sql: plainSQL}
	if c.history {
		q.sql = historySQL
	}
	var err error
	if q.ingest, err = open(false); err != nil {
		return nil, err
	}
	if q.dispatch, err = open(true); err != nil {
		q.close()
		return nil, err
	}
	if _, err := q.ingest.Exec(ctx, q.sql.schema); err != nil {
		q.close()
		return nil, fmt.Errorf("schema: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if q.embedded, err = storage.StartEmbedded(ctx, logger, "127.0.0.1:0", c.dataDir); err != nil {
		q.close()
		return nil, err
	}
	if q.store, err = q.embedded.NewStore(ctx, "floor", "us-east-1"); err != nil {
		q.close()
		return nil, err
	}
	if err := q.store.EnsureBucket(ctx); err != nil {
		q.close()
		return nil, err
	}
	go q.commit(ctx)
	go func() {
		select {
		case <-c.resume:
			go q.pingLoop(ctx)
			q.dispatchLoop(ctx, d, c.workers, c.batch, c.rate)
		case <-ctx.Done():
		}
	}()
	go q.vacuumLoop(ctx)
	return q, nil
}

func (q *pgQueue) close() {
	if q.store != nil {
		q.store.Close()
	}
	if q.embedded != nil {
		_ = q.embedded.Close()
	}
	if q.ingest != nil {
		q.ingest.Close()
	}
	if q.dispatch != nil {
		q.dispatch.Close()
	}
}

func (q *pgQueue) enqueue(ctx context.Context, body []byte) error {
	row := pendingRow{body: body, done: make(chan error, 1)}
	if len(body) > largeBytes {
		key := "floor/" + strconv.FormatInt(q.objects.Add(1), 10)
		if _, err := q.store.Put(ctx, key, body); err != nil {
			return err
		}
		row.body, row.ref = nil, key
	}
	select {
	case q.in <- row:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-row.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// commit inserts whatever has queued up in one statement (and one commit),
// then answers every waiting request.
func (q *pgQueue) commit(ctx context.Context) {
	const most = 512
	batch := make([]pendingRow, 0, most)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return
		case r := <-q.in:
			batch = append(batch, r)
		}
	more:
		for len(batch) < most {
			select {
			case r := <-q.in:
				batch = append(batch, r)
			default:
				break more
			}
		}
		bodies := make([][]byte, len(batch))
		refs := make([]*string, len(batch))
		for i := range batch {
			bodies[i] = batch[i].body
			if batch[i].ref != "" {
				refs[i] = &batch[i].ref
			}
		}
		_, err := q.ingest.Exec(ctx, q.sql.insert, bodies, refs)
		for _, r := range batch {
			r.done <- err
		}
	}
}

// dispatchLoop keeps up to workers deliveries in flight: it claims as many
// rows as there are free slots (at most batch, if set), delivers each in its
// own goroutine and hands the delivered ids to the batched delete. With a
// rate, a claim waits until the rows claimed since the start, its own
// included, are within rate per second.
func (q *pgQueue) dispatchLoop(ctx context.Context, d *deliverer, workers, batch int, rate float64) {
	slots := make(chan struct{}, workers)
	acks := make(chan int64, workers*4)
	go q.ackLoop(ctx, acks)
	var cursor int64
	var claimed []claimedRow
	reset := time.Now()
	began, total := reset, 0
	for ctx.Err() == nil {
		free := workers - len(slots)
		if free < workers/4 {
			time.Sleep(time.Millisecond)
			continue
		}
		if time.Since(reset) > cursorReset {
			cursor, reset = 0, time.Now()
		}
		if batch > 0 {
			free = min(free, batch)
		}
		if rate > 0 {
			if ahead := time.Duration(float64(total+free)/rate*float64(time.Second)) - time.Since(began); ahead > 0 {
				time.Sleep(ahead)
			}
		}
		conn, err := q.dispatch.Acquire(ctx)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		start := time.Now()
		rows, err := conn.Query(ctx, q.sql.claim, free, cursor)
		if err != nil {
			conn.Release()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		// The rows are read in full before any delivery starts, so the
		// claim's time is the statement's and the read's alone.
		claimed = claimed[:0]
		for rows.Next() {
			var r claimedRow
			if err := rows.Scan(&r.id, &r.body, &r.ref); err != nil {
				break
			}
			claimed = append(claimed, r)
		}
		rows.Close()
		q.claims.add(time.Since(start), len(claimed))
		conn.Release()
		if err := rows.Err(); err != nil && ctx.Err() == nil {
			// Rows leased by a failed read come back when their lease runs out.
			fmt.Fprintln(os.Stderr, "floor relay: claim:", err)
		}
		n := len(claimed)
		total += n
		for _, r := range claimed {
			cursor = max(cursor, r.id)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots }()
				body := r.body
				if r.ref != nil {
					b, err := q.store.Get(ctx, *r.ref)
					if err != nil {
						return // the lease runs out and the row is claimed again
					}
					body = b
				}
				if d.deliver(ctx, r.id, body) == nil {
					acks <- r.id
				}
			}()
		}
		if n == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// pingEvery is how often pingLoop sends its SELECT 1.
const pingEvery = 10 * time.Millisecond

// pingLoop times a SELECT 1 on a held connection at the resume and every
// pingEvery after it: the round trip of a statement that does no work, the
// part of a claim's time that is the machine's (scheduling the backend and
// the relay) rather than the claim's.
func (q *pgQueue) pingLoop(ctx context.Context) {
	conn, err := q.dispatch.Acquire(ctx)
	if err != nil {
		return
	}
	defer conn.Release()
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		var one int
		start := time.Now()
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "floor relay: ping:", err)
			}
			return
		}
		q.claims.addPing(time.Since(start))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// claimedRow is one leased row as the claim returns it.
type claimedRow struct {
	id   int64
	body []byte
	ref  *string // object key of a large body
}

// vacuumLoop vacuums the queue table every vacuumEvery.
func (q *pgQueue) vacuumLoop(ctx context.Context) {
	t := time.NewTicker(vacuumEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := q.dispatch.Exec(ctx, "VACUUM floor_queue"); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "floor relay: vacuum:", err)
			}
		}
	}
}

// ackLoop deletes delivered rows, as many per statement as have arrived.
func (q *pgQueue) ackLoop(ctx context.Context, acks <-chan int64) {
	ids := make([]int64, 0, 1024)
	for {
		ids = ids[:0]
		select {
		case <-ctx.Done():
			return
		case id := <-acks:
			ids = append(ids, id)
		}
	more:
		for len(ids) < cap(ids) {
			select {
			case id := <-acks:
				ids = append(ids, id)
			default:
				break more
			}
		}
		if _, err := q.dispatch.Exec(ctx, q.sql.delete, ids); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "floor relay: delete:", err)
		}
	}
}
