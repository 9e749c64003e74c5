package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// Finish claims every due delivery in the logical queue of orderingKey and
// acknowledges each with kind through the dispatcher's own store functions:
// AckSuccess as a 200, AckDead as a failed 500 ("boom"). It fails the test
// when nothing was due.
func Finish(t testing.TB, store *db.DB, orderingKey string, kind db.AckKind) {
	t.Helper()
	ctx := context.Background()
	q := hookrelay.QueueFor(orderingKey, hookrelay.DefaultQueues)
	claimed, err := DeliveryClaim(ctx, store, []int{q}, 100, 100, 1, time.Now().UnixNano(), time.Minute)
	if err != nil {
		t.Fatalf("dbtest.Finish: claim: %v", err)
	}
	if len(claimed) == 0 {
		t.Fatalf("dbtest.Finish: nothing due in queue %d", q)
	}
	results := make([]db.DeliveryResult, len(claimed))
	for i, c := range claimed {
		outcome, status := "success", 200
		if kind == db.AckDead {
			outcome, status = "failed", 500
		}
		results[i] = db.DeliveryResult{
			ID: c.ID, LeaseToken: c.LeaseToken, EndpointID: c.EndpointID, Kind: kind, Spend: true,
			Outcome: outcome, Status: status, Latency: 3 * time.Millisecond, Error: "boom", Excerpt: "x",
		}
	}
	if _, err := store.DeliveryAckBatch(ctx, 1, results, nil, db.HealthPolicy{}); err != nil {
		t.Fatalf("dbtest.Finish: acknowledge: %v", err)
	}
}
