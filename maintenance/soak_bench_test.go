package maintenance

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// BenchmarkHotTableChurn pushes rows through deliveries the way the service
// does — batched inserts (ingest), claims of 50 that lease the rows (an
// UPDATE of visible_at), then deletes (acks) — with the maintenance role's
// vacuum loop running, and samples the table's size and dead-tuple ratio
// every second. One iteration is one callback; run it with
// -benchtime=5000000x for the soak. The live backlog is kept near 20,000.
//
//	go test -run '^$' -bench HotTableChurn -benchtime=5000000x ./maintenance
func BenchmarkHotTableChurn(b *testing.B) {
	url := dbtest.NewURL(b)
	store := dbtest.Open(b, url, db.Config{})
	pool, err := pgxpool.New(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(b.Context(), "CREATE EXTENSION IF NOT EXISTS pgstattuple"); err != nil {
		b.Fatal(err)
	}
	cfg := Config{RetentionInterval: -1, HealthInterval: -1, StatInterval: -1}
	if v := os.Getenv("SOAK_VACUUM_INTERVAL"); v != "" {
		cfg.VacuumInterval, _ = time.ParseDuration(v)
	}
	if v := os.Getenv("SOAK_VACUUM_DEAD_TUPLES"); v != "" {
		n, _ := strconv.Atoi(v)
		cfg.VacuumDeadTuples = int64(n)
	}
	if v := os.Getenv("SOAK_REINDEX_MIN_MB"); v != "" {
		n, _ := strconv.Atoi(v)
		cfg.ReindexMinBytes = int64(n) << 20
	}
	mt := New(discardLogger(), cfg, store, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = mt.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	const backlog, batch, claim = 20_000, 500, 50
	total := int64(b.N)
	var inserted, deleted atomic.Int64
	var maxBytes, sumSamples, samples atomic.Int64
	var maxRatio, sumRatio, maxSpace, sumSpace atomicFloat
	sample := func() {
		var bytes, live, dead int64
		var space float64
		// pgstattuple reads the whole table: dead_tuple_percent is the share
		// of its space held by dead tuples (what the seed note measured).
		err := pool.QueryRow(ctx, `SELECT pg_total_relation_size('deliveries'), n_live_tup, n_dead_tup,
				(SELECT dead_tuple_percent FROM pgstattuple('deliveries'))
			FROM pg_stat_user_tables WHERE relname = 'deliveries'`).Scan(&bytes, &live, &dead, &space)
		if err != nil {
			return
		}
		r := float64(dead) / float64(max(live+dead, 1)) // dead / (live + dead), 0 for an empty table
		maxRatio.max(r)
		sumRatio.add(r)
		maxSpace.max(space / 100)
		sumSpace.add(space / 100)
		samples.Add(1)
		sumSamples.Add(bytes)
		if bytes > maxBytes.Load() {
			maxBytes.Store(bytes)
		}
	}
	b.ResetTimer()
	start := time.Now()
	var g sync.WaitGroup
	g.Go(func() { // ingest
		for inserted.Load() < total {
			if inserted.Load()-deleted.Load() > backlog {
				time.Sleep(time.Millisecond)
				continue
			}
			n := min(int64(batch), total-inserted.Load())
			_, err := pool.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
				SELECT (g % 32), 1 + g % 100, 'key-' || (g % 10000), g, now() FROM generate_series(1, $1::int) g`, n)
			if err != nil {
				b.Error(err)
				return
			}
			inserted.Add(n)
		}
	})
	for w := range 4 { // dispatchers: claim 50 of a queue, then ack (delete) them
		g.Go(func() {
			q := w
			for deleted.Load() < total {
				q = (q + 4) % 32
				rows, err := pool.Query(ctx, `WITH c AS MATERIALIZED (
					SELECT id FROM deliveries WHERE queue = $1 AND visible_at <= now()
					ORDER BY visible_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
				UPDATE deliveries d SET visible_at = now() + interval '30 seconds', lease_owner = 1,
					lease_token = (random() * 1e9)::bigint, attempt = attempt + 1
				FROM c WHERE d.id = c.id RETURNING d.id`, q, claim)
				if err != nil {
					b.Error(err)
					return
				}
				var ids []int64
				for rows.Next() {
					var id int64
					_ = rows.Scan(&id)
					ids = append(ids, id)
				}
				rows.Close()
				if len(ids) == 0 {
					if inserted.Load() >= total && deleted.Load() >= inserted.Load() {
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				tag, err := pool.Exec(ctx, "DELETE FROM deliveries WHERE id = ANY($1)", ids)
				if err != nil {
					b.Error(err)
					return
				}
				deleted.Add(tag.RowsAffected())
			}
		})
	}
	done := make(chan struct{})
	var sg sync.WaitGroup
	sg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	})
	g.Wait()
	close(done)
	sg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(max(samples.Load(), 1))
	b.ReportMetric(float64(deleted.Load())/elapsed.Seconds(), "callbacks/s")
	b.ReportMetric(float64(maxBytes.Load())/(1<<20), "max-MB")
	b.ReportMetric(float64(sumSamples.Load())/n/(1<<20), "mean-MB")
	b.ReportMetric(maxRatio.load(), "max-dead-ratio")
	b.ReportMetric(sumRatio.load()/n, "mean-dead-ratio")
	b.ReportMetric(maxSpace.load(), "max-dead-space")
	b.ReportMetric(sumSpace.load()/n, "mean-dead-space")
	b.ReportMetric(value(b, mt.m.vacuums.WithLabelValues("deliveries")), "vacuums")
	var reindexes float64
	for _, ix := range []string{"deliveries_pkey", "deliveries_claim_idx", "deliveries_chain_idx", "deliveries_endpoint_idx"} {
		reindexes += value(b, mt.m.reindexes.WithLabelValues(ix))
	}
	b.ReportMetric(reindexes, "reindexes")
	var hm dto.Metric
	_ = mt.m.vacuumSeconds.Write(&hm)
	if c := hm.Histogram.GetSampleCount(); c > 0 {
		b.ReportMetric(hm.Histogram.GetSampleSum()/float64(c), "vacuum-s")
	}
	b.Logf("%d callbacks in %s; %d samples", deleted.Load(), elapsed.Round(time.Millisecond), samples.Load())
}

// atomicFloat is a float64 updated atomically (by one sampler; atomics keep
// the race detector content).
type atomicFloat struct{ v atomic.Value }

func (a *atomicFloat) load() float64 {
	f, _ := a.v.Load().(float64)
	return f
}
func (a *atomicFloat) add(d float64) { a.v.Store(a.load() + d) }
func (a *atomicFloat) max(d float64) {
	if d > a.load() {
		a.v.Store(d)
	}
}
