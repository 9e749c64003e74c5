package searchbench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestFillAndMeasure is the benchmark in small (make bench-search runs it
// at 50 million messages): a fill of 10,000 messages, the rows it should
// write, and every kind of search through a started API finding what the
// fill put there, so that neither the generator nor the searches rot.
func TestFillAndMeasure(t *testing.T) {
	ctx := t.Context()
	bin, err := testenv.BuildHookrelay(t.TempDir())
	require.NoError(t, err)
	name := fmt.Sprintf("searchbench_smoke_%d", time.Now().UnixNano())
	dbURL, err := CreateDatabase(ctx, dbtest.ServerURL(), name, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { dropDatabase(t, name) })

	s := DefaultShape(time.Now())
	s.Messages, s.Pending = 10_000, 20
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	rep, err := Fill(ctx, pool, s, 2, io.Discard)
	require.NoError(t, err)
	require.Len(t, rep.Days, 8, "7 days before a time of day touch 8 day partitions")

	count := func(q string) (n int64) {
		require.NoError(t, pool.QueryRow(ctx, q).Scan(&n), q)
		return n
	}
	require.Equal(t, s.Messages, count(`SELECT count(*) FROM messages`))
	require.Equal(t, s.Messages-s.Pending, count(`SELECT count(*) FROM delivery_attempts`))
	require.Equal(t, s.Pending, count(`SELECT count(*) FROM deliveries`))
	require.Equal(t, (s.Messages-s.Pending)/s.DeadEvery, count(`SELECT count(*) FROM dead_letters`))
	require.Zero(t, count(`SELECT count(*) FROM messages m WHERE NOT EXISTS (
        SELECT 1 FROM delivery_attempts a WHERE a.message_id = m.id) AND NOT EXISTS (
        SELECT 1 FROM deliveries d WHERE d.message_id = m.id)`), "every message has its delivery")
	// The Go side of the key formula names the same tracking numbers.
	k := s.keyNumber(s.Messages / 2)
	require.Equal(t, int64(s.PerKey), count(fmt.Sprintf(`SELECT count(*) FROM messages WHERE ordering_key = '%s'`, s.trackingNumber(k))))
	require.Equal(t, int64(s.PerKey), count(fmt.Sprintf(`SELECT count(*) FROM delivery_attempts WHERE endpoint_id = %d
        AND message_id IN (SELECT id FROM messages WHERE ordering_key = '%s')`, s.endpointOf(k), s.trackingNumber(k))))

	out := t.TempDir()
	c := MeasureConfig{Searches: 10, Lists: 2, Seed: 7, Budget: 10 * time.Second, OutDir: out}
	res, err := Measure(ctx, dbURL, bin, s, c, io.Discard)
	require.NoError(t, err)
	items := map[string]float64{}
	for _, l := range res.Latencies {
		require.Zero(t, l.Failed, l.Name)
		require.Positive(t, l.Count, l.Name)
		items[l.Name] = l.MeanItems
	}
	require.Greater(t, items["key, operator, 7 days"], 3.0, "a key's callbacks are found")
	require.Greater(t, items["key, merchant, 7 days"], 3.0, "and its merchant sees them")
	require.Zero(t, items["key absent, operator, 7 days"])
	require.Equal(t, 100.0, items["list first page, operator"])
	require.Equal(t, 100.0, items["list deep page, operator"])
	require.Equal(t, 20.0, items["list first page, operator, status=pending"])
	require.Positive(t, items["list first page, operator, status=dead"])
	require.Positive(t, items["list first page, merchant"])
	require.FileExists(t, filepath.Join(out, "results.json"))
}

func dropDatabase(t *testing.T, name string) {
	ctx := context.WithoutCancel(t.Context())
	conn, err := pgx.Connect(ctx, dbtest.ServerURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	require.NoError(t, err)
}
