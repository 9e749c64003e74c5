package db_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// BenchmarkDeliveryClaim measures one claim of 50 rows against a backlog of
// 1,000,000 pending deliveries (10 endpoints, 100,000 ordering keys, 32
// queues):
//   - steady: the state a running dispatcher keeps, chain heads visible and
//     the rest parked (the claim leases 50 heads);
//   - fresh: every row visible, as ingest leaves them (the claim parks
//     non-heads and leases the heads among its 50 candidates).
//
// Each reports leased rows and the p50/p99 of one claim's time (round trip
// from this process, the machine otherwise idle).
//
// Run: go test ./db -run '^$' -bench DeliveryClaim -benchtime 300x
func BenchmarkDeliveryClaim(b *testing.B) {
	for _, mode := range []string{"steady", "fresh"} {
		b.Run(mode, func(b *testing.B) {
			url := dbtest.NewURL(b)
			store := dbtest.Open(b, url, db.Config{})
			ctx := context.Background()
			var eps []int64
			for range 10 {
				ep, _ := dbtest.Endpoint(b, store, nil)
				eps = append(eps, ep.ID)
			}
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			const rows, keys = 1_000_000, 100_000
			visible := "now() - interval '1 minute'"
			if mode == "steady" {
				// Heads (the first row of each key) visible, the rest parked.
				visible = fmt.Sprintf("CASE WHEN g <= %d THEN now() - interval '1 minute' ELSE 'infinity' END", keys)
			}
			setup := []string{
				`INSERT INTO messages (id, received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
				 SELECT g, date_trunc('hour', now()), 1, 'k' || g, g % 32, '{"a":1}'::bytea, 7, '\x00'::bytea
				 FROM generate_series(1, 1000) g`,
				fmt.Sprintf(`INSERT INTO deliveries (id, queue, endpoint_id, ordering_key, message_id, message_received_at, visible_at)
				 SELECT g, (g %% %d) %% 32, (ARRAY[%s])[1 + (g %% %d) %% 10], 'key-' || (g %% %d), 1 + g %% 1000,
				        date_trunc('hour', now()), %s
				 FROM generate_series(1, %d) g`, keys, joinIDs(eps), keys, keys, visible, rows),
				`VACUUM ANALYZE deliveries`,
			}
			for _, q := range setup {
				if _, err := conn.Exec(ctx, q); err != nil {
					b.Fatalf("setup: %v", err)
				}
			}
			all := make([]int, 32)
			for i := range all {
				all[i] = i
			}
			// one-queue: a claim of one logical queue; all-queues: what a
			// dispatcher holding every queue runs (7 rows per queue at most).
			for _, shape := range []string{"one-queue", "all-queues"} {
				b.Run(shape, func(b *testing.B) {
					q, claimed := 0, 0
					var took []time.Duration
					var inFlight [][]int64
					for i := 0; b.Loop(); i++ {
						queues, perQueue := []int{q}, 50
						if shape == "all-queues" {
							queues, perQueue = append(all[q:], all[:q]...), 7
						}
						start := time.Now()
						got, err := dbtest.DeliveryClaim(ctx, store, queues, perQueue, 50, 1, int64(i+1), time.Hour)
						took = append(took, time.Since(start))
						if err != nil {
							b.Fatal(err)
						}
						claimed += len(got)
						q = (q + 1) % 32
						// Acknowledge (delete) the rows of the claim four
						// back: ~200 deliveries stay in flight, leased at the
						// front of their queues, as under a running
						// dispatcher. Not timed.
						ids := make([]int64, len(got))
						for j, d := range got {
							ids[j] = d.ID
						}
						inFlight = append(inFlight, ids)
						if len(inFlight) > 4 {
							if _, err := conn.Exec(ctx, "DELETE FROM deliveries WHERE id = ANY($1)", inFlight[0]); err != nil {
								b.Fatal(err)
							}
							inFlight = inFlight[1:]
						}
					}
					b.ReportMetric(float64(claimed)/float64(b.N), "leased/op")
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)/2].Microseconds())/1e3, "p50-ms")
					b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1e3, "p99-ms")
				})
			}
		})
	}
}

func joinIDs(ids []int64) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(id)
	}
	return s
}
