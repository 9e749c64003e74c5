package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func TestDeliveriesAndDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	send := func(key string) string {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"`+key+`"}`), "X-Merchant-Id", w.M1)
		require.Equal(t, http.StatusAccepted, st)
		return out["message_id"].(string)
	}
	list := func(status string) []any {
		st, out := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1+"/deliveries?status="+status, w.M1Key, nil)
		require.Equal(t, http.StatusOK, st, "%v", out)
		return out["items"].([]any)
	}
	send("P1")
	send("D1")
	send("X1")
	dbtest.Finish(t, b.DB, "D1", db.AckSuccess)
	dbtest.Finish(t, b.DB, "X1", db.AckDead)
	pending, delivered, dead := list("pending"), list("delivered"), list("dead")
	require.Len(t, pending, 1)
	require.Len(t, delivered, 1)
	require.Len(t, dead, 1)
	for _, c := range []struct {
		rows []any
		key  string
	}{{pending, "P1"}, {delivered, "D1"}, {dead, "X1"}} {
		require.Equal(t, c.key, c.rows[0].(map[string]any)["ordering_key"], "every status lists its ordering key")
	}
	st, _ := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1+"/deliveries?status=bogus", w.M1Key, nil)
	require.Equal(t, http.StatusBadRequest, st)

	deliveredID := delivered[0].(map[string]any)["id"].(string)
	deadID := dead[0].(map[string]any)["id"].(string)
	pendingID := pending[0].(map[string]any)["id"].(string)

	st, d := b.call(t, http.MethodGet, "/v1/deliveries/"+deliveredID, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "delivered", d["status"])
	require.Len(t, d["attempt_history"], 1)
	st, d = b.call(t, http.MethodGet, "/v1/deliveries/"+deadID, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "dead", d["status"])
	st, _ = b.call(t, http.MethodGet, "/v1/deliveries/"+deadID, w.M2Key, nil)
	require.Equal(t, http.StatusNotFound, st, "another merchant's delivery")
	st, _ = b.call(t, http.MethodGet, "/v1/deliveries/999999999", w.M1Key, nil)
	require.Equal(t, http.StatusNotFound, st)

	// Retry: delivered is a conflict; pending is fine; dead goes back to the queue.
	st, _ = b.call(t, http.MethodPost, "/v1/deliveries/"+deliveredID+"/retry", w.M1Key, nil)
	require.Equal(t, http.StatusConflict, st)
	st, _ = b.call(t, http.MethodPost, "/v1/deliveries/"+pendingID+"/retry", w.M1Key, nil)
	require.Equal(t, http.StatusAccepted, st)
	st, _ = b.call(t, http.MethodPost, "/v1/deliveries/"+deadID+"/retry", w.M1Key, nil)
	require.Equal(t, http.StatusAccepted, st)
	st, d = b.call(t, http.MethodGet, "/v1/deliveries/"+deadID, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "pending", d["status"])
	require.Equal(t, false, d["ordered"], "an operator retry is unordered")
	require.Equal(t, float64(0), d["attempts"])
	require.Len(t, list("dead"), 0)
	require.Len(t, list("pending"), 2)
}

func TestDeadLetterAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	for _, k := range []string{"A", "B", "C"} {
		st, _ := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"`+k+`"}`))
		require.Equal(t, http.StatusAccepted, st)
		dbtest.Finish(t, b.DB, k, db.AckDead)
	}
	// 3 callbacks × 2 endpoints.
	st, out := b.call(t, http.MethodGet, "/v1/dead-letters?limit=4", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 4)
	require.NotEmpty(t, out["next_cursor"])
	st, out2 := b.call(t, http.MethodGet, "/v1/dead-letters?limit=4&cursor="+out["next_cursor"].(string), adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out2["items"], 2)
	require.Empty(t, out2["next_cursor"])

	st, out = b.call(t, http.MethodGet, "/v1/dead-letters?endpoint_id="+w.E2, adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 3)
	st, out = b.call(t, http.MethodGet, "/v1/dead-letters?carrier_id="+w.CarrierID+"&since="+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 6)
	st, _ = b.call(t, http.MethodGet, "/v1/dead-letters?since=yesterday", adminToken, nil)
	require.Equal(t, http.StatusBadRequest, st)

	first := out["items"].([]any)[0].(map[string]any)["id"].(string)
	st, res := b.call(t, http.MethodPost, "/v1/dead-letters/retry", adminToken, map[string]any{"ids": []string{first}})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(1), res["count"])
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/retry", adminToken, map[string]any{"ids": []string{first}})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(0), res["count"], "moved once, never doubled")

	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/retry", adminToken, map[string]any{"filter": map[string]any{"endpoint_id": w.E2}})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(3), res["count"])
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/discard", adminToken, map[string]any{"filter": map[string]any{}})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(2), res["count"])
	st, _ = b.call(t, http.MethodPost, "/v1/dead-letters/discard", adminToken, map[string]any{})
	require.Equal(t, http.StatusBadRequest, st, "ids or filter is required")

	stats := b.stats(t)
	require.Equal(t, float64(0), stats["dead_letters"])
	require.Equal(t, float64(4), stats["pending_deliveries"], "retried rows are back in the queue")
}

// TestParkedDeliveryReads: a delivery parked behind an earlier one of its
// key lists and reads as pending with no next attempt (its visible_at is
// 'infinity', which once failed the whole list).
func TestParkedDeliveryReads(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	for range 2 {
		st, _ := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"PK1"}`), "X-Merchant-Id", w.M1)
		require.Equal(t, http.StatusAccepted, st)
	}
	// The first claim leases the head and parks the one behind it; the
	// second finds nothing due.
	ctx := context.Background()
	q := hookrelay.QueueFor("PK1", hookrelay.DefaultQueues)
	for i := range 2 {
		claimed, err := dbtest.DeliveryClaim(ctx, b.DB, []int{q}, 100, 100, 1, int64(i+1), time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1-i)
	}
	st, out := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1+"/deliveries?status=pending", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	items := out["items"].([]any)
	require.Len(t, items, 2)
	head, parked := items[0].(map[string]any), items[1].(map[string]any)
	require.NotEmpty(t, head["next_attempt_at"], "the head is due when its lease runs out")
	require.NotContains(t, parked, "next_attempt_at", "parked: no next attempt")
	st, d := b.call(t, http.MethodGet, "/v1/deliveries/"+parked["id"].(string), w.M1Key, nil)
	require.Equal(t, http.StatusOK, st, "%v", d)
	require.Equal(t, "pending", d["status"])
	require.NotContains(t, d, "next_attempt_at")
}
