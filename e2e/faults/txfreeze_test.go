//go:build faults

package faults

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestStalledAckTransaction: a dispatcher frozen (SIGSTOP, a long GC pause,
// a network partition) right after the health update of its acknowledgement
// transaction stays "idle in transaction" holding the row locks of the
// endpoints' endpoint_health rows, which every other dispatcher's
// acknowledgements update too. The other dispatchers must keep delivering
// meanwhile: a stalled process may delay only its own in-flight work, never
// everybody's (docs/guarantees.md).
//
// Freezing a real process at exactly that statement takes minutes of tries
// (it was done while writing this test: the other dispatcher then delivered
// 0 of 3,900 new deliveries in 4 s), so the test holds the same locks from
// its own session, in a transaction left open for three lease times, while
// two real dispatchers run.
func TestStalledAckTransaction(t *testing.T) {
	url := dbURL(t)
	s3 := startS3(t)
	env := serviceEnv(url, s3, nil)
	api := newProc(t, "api", "api,maintenance", env)
	api.start()
	d1 := newProc(t, "dispatch1", "dispatch", env)
	d1.start()
	d2 := newProc(t, "dispatch2", "dispatch", env)
	d2.start()
	dumpLogs(t, api, d1, d2)

	w := newWorld(t, api.URL(), 2, 30, load.SinkConfig{Latency: 5 * time.Millisecond})
	l := w.load(loadConfig{Targets: []string{api.URL()}, Interval: 50 * time.Millisecond})
	stop := runLoad(l)
	defer stop()

	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var ids []int64
	for _, e := range w.endpoints {
		id, err := strconv.ParseInt(e.ID, 10, 64)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	// The traffic's first acknowledgements make the endpoints' health rows.
	testenv.EventuallyErr(t, 60*time.Second, func() error {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM endpoint_health WHERE endpoint_id = ANY($1)`, ids).Scan(&n))
		if n < len(ids) {
			return fmt.Errorf("%d of %d endpoint_health rows", n, len(ids))
		}
		return nil
	})
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	tag, err := tx.Exec(ctx, `UPDATE endpoint_health SET updated_at = updated_at WHERE endpoint_id = ANY($1)`, ids)
	require.NoError(t, err)
	require.EqualValues(t, len(ids), tag.RowsAffected(), "endpoint_health rows of the sink endpoints")
	time.Sleep(lease)
	exp0, got0 := w.ledger.Progress()
	time.Sleep(2 * lease)
	exp1, got1 := w.ledger.Progress()
	require.NoError(t, tx.Rollback(ctx))
	offered, delivered := exp1-exp0, got1-got0

	time.Sleep(2 * time.Second)
	stop()
	drain := w.drain(90 * time.Second)
	w.account(result{Scenario: "acknowledgement transaction stalled", Faults: 1, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: maxLatency(w.ledger).String(),
		Extra:       map[string]any{"offered_while_stalled": offered, "delivered_while_stalled": delivered}},
		l, inFlightBound)
	// Between one and three leases into the stall, the dispatchers deliver
	// at least a quarter of what the carriers sent meanwhile.
	require.GreaterOrEqual(t, 4*delivered, offered,
		"while a transaction held the endpoints' endpoint_health rows, the dispatchers delivered %d of %d new deliveries", delivered, offered)
}
