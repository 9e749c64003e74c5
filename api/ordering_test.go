package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEndpointOrdering: "ordering" is "key" by default, can be set at
// creation and changed by PATCH, and anything else is a 400 that changes
// nothing. Callbacks stored while an endpoint is "none" get unordered
// deliveries; after a change back to "key", new callbacks are ordered again
// and the deliveries already queued keep their mode.
func TestEndpointOrdering(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)

	st, got := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "key", got["ordering"], "the default")

	made := b.mustCreate(t, "/v1/endpoints", w.M2Key, map[string]any{"url": "http://127.0.0.1:9/none", "ordering": "none"})
	require.Equal(t, "none", made["ordering"])

	for _, bad := range []any{"keys", "", "KEY", 1} {
		st, out := b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"ordering": bad})
		require.Equal(t, http.StatusBadRequest, st, "%v: %v", bad, out)
		require.Equal(t, "invalid", errCode(out), "%v", out)
		if bad != 1 {
			require.Contains(t, out["error"].(map[string]any)["message"], "ordering", "%v", out)
		}
	}
	st, out := b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/x", "ordering": "fifo"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)

	send := func(key string) {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"`+key+`"}`), "X-Merchant-Id", w.M1)
		require.Equal(t, http.StatusAccepted, st, "%v", out)
	}
	pending := func() map[string]bool { // message id → ordered
		st, out := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1+"/deliveries?status=pending", w.M1Key, nil)
		require.Equal(t, http.StatusOK, st, "%v", out)
		m := map[string]bool{}
		for _, it := range out["items"].([]any) {
			d := it.(map[string]any)
			m[d["message_id"].(string)] = d["ordered"].(bool)
		}
		return m
	}

	send("K1")
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"ordering": "none"})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "none", got["ordering"])
	require.Equal(t, float64(10), got["max_in_flight"], "fields not sent are kept")
	st, got = b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "none", got["ordering"])
	before := pending()
	require.Len(t, before, 1)
	send("K1")
	send("K1")
	afterNone := pending()
	require.Len(t, afterNone, 3)
	for id, ordered := range afterNone {
		_, old := before[id]
		require.Equal(t, old, ordered, "queued before the change: ordered; stored after it: unordered")
	}

	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"description": "d"})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "none", got["ordering"], "a PATCH without it keeps it")
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"ordering": "key"})
	require.Equal(t, http.StatusOK, st, "%v", got)
	send("K1")
	final := pending()
	require.Len(t, final, 4)
	orderedCount := 0
	for id, ordered := range final {
		if o, ok := afterNone[id]; ok {
			require.Equal(t, o, ordered, "queued deliveries keep their mode")
		} else {
			require.True(t, ordered, "stored after the change back: ordered")
		}
		if ordered {
			orderedCount++
		}
	}
	require.Equal(t, 2, orderedCount)
}
