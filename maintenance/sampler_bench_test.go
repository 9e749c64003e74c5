package maintenance

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// BenchmarkSamplersLargeBacklog measures one stat sample and one health
// snapshot with a large pending backlog (SAMPLER_BACKLOG rows, default
// 1,000,000) and a busy window (50,000 callbacks and attempts in 10 s, i.e.
// 5,000/s).
//
//	go test -run '^$' -bench SamplersLargeBacklog ./maintenance
func BenchmarkSamplersLargeBacklog(b *testing.B) {
	url := dbtest.NewURL(b)
	store := dbtest.Open(b, url, db.Config{})
	conn, err := pgx.Connect(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(b.Context())
	backlog := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("SAMPLER_BACKLOG")); err == nil {
		backlog = v
	}
	now := time.Now().UTC()
	from, to := now.Add(-15*time.Second), now.Add(-5*time.Second)
	for _, q := range []string{
		`INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
			SELECT g % 32, 1 + g % 100, 'key-' || g, g, now() - interval '1 hour' FROM generate_series(1, $1::int) g`,
		`INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
			SELECT $2::timestamptz + (g * interval '1 millisecond') / 5, 1, 'k' || g, 0, convert_to(repeat('x', 1200), 'UTF8'), 1200, '\x00'
			FROM generate_series(0, 49999 + 0 * $1::int) g`,
		`INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome, latency_ms)
			SELECT g, g, $2::timestamptz + (g * interval '1 millisecond') / 5 - interval '20 milliseconds', 1, 1,
			       $2::timestamptz + (g * interval '1 millisecond') / 5, CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'success' END, 5
			FROM generate_series(0, 49999 + 0 * $1::int) g`,
		`VACUUM ANALYZE deliveries`, `ANALYZE messages`, `ANALYZE delivery_attempts`,
	} {
		var args []any
		switch {
		case strings.Contains(q, "$2"):
			args = []any{backlog, from}
		case strings.Contains(q, "$1"):
			args = []any{backlog}
		}
		if _, err := conn.Exec(b.Context(), q, args...); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("stat_sample", func(b *testing.B) {
		for b.Loop() {
			s, err := store.StatSampleTake(b.Context(), from, to, now, 32)
			if err != nil {
				b.Fatal(err)
			}
			if s.Ingested != 50000 || s.BacklogTotal < int64(backlog)*9/10 || s.BacklogTotal > int64(backlog)*11/10 {
				b.Fatalf("sample %+v", s)
			}
		}
	})
	b.Run("health_snapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := store.HealthSnapshot(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
