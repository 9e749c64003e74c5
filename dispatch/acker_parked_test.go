package dispatch

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestAckerWritesAtOnceForParkedSuccessors: with an interval that never
// passes in the test, a result of an ordered chain that had a parked
// successor when last acknowledged is written at once, with the results
// already waiting; a chain whose batch promoted nothing waits for its batch
// again, as do unordered results.
func TestAckerWritesAtOnceForParkedSuccessors(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ep, _ := dbtest.Endpoint(t, store, nil)
	reports := make(chan db.AckReport, 8)
	a := newAcker(store, slog.New(slog.NewTextHandler(t.Output(), nil)), newMetrics(prometheus.NewRegistry()), 0, db.HealthPolicy{},
		time.Hour, 100, 2, time.Now, func(r db.AckReport) { reports <- r })
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.run(time.Second)
	}()
	// Rows that do not exist: each result is acknowledged as stale.
	result := func(id int64, chain string, ordered bool) ackItem {
		return ackItem{res: db.DeliveryResult{ID: id, LeaseToken: 1, EndpointID: ep.ID, Kind: db.AckSuccess,
			Outcome: "success", Status: 200, AttemptedAt: time.Now(), Chain: chain, Ordered: ordered, ChainKnown: true}}
	}
	report := func(what string) db.AckReport {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("no acknowledgement: %s", what)
			return db.AckReport{}
		}
	}
	a.noteChains([]db.DeliveryResult{result(0, "backlogged", true).res}, 1)
	require.True(t, a.releasesParked(result(0, "backlogged", true).res))
	require.False(t, a.releasesParked(result(0, "other", true).res))
	require.False(t, a.releasesParked(result(0, "backlogged", false).res), "unordered")

	a.in <- result(1<<40, "other", true)
	a.in <- result(1<<40+1, "none", false)
	a.in <- result(1<<40+2, "backlogged", true)
	r := report("a parked successor waits")
	require.Equal(t, 3, r.Applied+r.Stale, "written with the results before it")
	require.Zero(t, r.Promoted)

	// That batch promoted nothing (noted before its report): its chains
	// have no parked rows now.
	require.False(t, a.releasesParked(result(0, "backlogged", true).res))
	a.in <- result(1<<40+3, "backlogged", true)
	close(a.in) // the run's last batch: only then is it written
	r = report("the last batch")
	require.Equal(t, 1, r.Applied+r.Stale)
	<-done
}
