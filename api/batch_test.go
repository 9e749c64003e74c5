package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEndpointBatchSetting: "batch" is null by default, set at creation or
// by PATCH ({"max_events", "max_wait"}, max_wait "1s" when not given),
// turned off by null and kept by a PATCH without it; bad settings are 400s
// naming batch that change nothing, and a poll endpoint takes none.
func TestEndpointBatchSetting(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)

	st, got := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Nil(t, got["batch"], "none by default")

	made := b.mustCreate(t, "/v1/endpoints", w.M2Key, map[string]any{"url": "http://127.0.0.1:9/b",
		"batch": map[string]any{"max_events": 100, "max_wait": "2s"}})
	require.Equal(t, map[string]any{"max_events": float64(100), "max_wait": "2s"}, made["batch"])

	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"batch": map[string]any{"max_events": 5}})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, map[string]any{"max_events": float64(5), "max_wait": "1s"}, got["batch"], "max_wait defaults to 1s")
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"description": "d"})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, float64(5), got["batch"].(map[string]any)["max_events"], "a PATCH without it keeps it")

	for _, bad := range []map[string]any{
		{}, {"max_events": 0}, {"max_events": 101}, {"max_events": -1},
		{"max_events": 10, "max_wait": "11s"}, {"max_events": 10, "max_wait": "-1s"}, {"max_events": 10, "max_wait": "soon"},
	} {
		st, out := b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"batch": bad})
		require.Equal(t, http.StatusBadRequest, st, "%v: %v", bad, out)
		require.Equal(t, "invalid", errCode(out), "%v", out)
		require.Contains(t, out["error"].(map[string]any)["message"], "batch", "%v", out)
		st, out = b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/x", "batch": bad})
		require.Equal(t, http.StatusBadRequest, st, "%v: %v", bad, out)
	}
	st, got = b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(5), got["batch"].(map[string]any)["max_events"], "refused changes changed nothing")

	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, map[string]any{"batch": nil})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Nil(t, got["batch"], "null turns it off")

	st, out := b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"type": "poll", "batch": map[string]any{"max_events": 10}})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	require.Contains(t, out["error"].(map[string]any)["message"], "poll", "%v", out)
	poll := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{"type": "poll"})
	st, out = b.call(t, http.MethodPatch, "/v1/endpoints/"+poll["id"].(string), w.M1Key, map[string]any{"batch": map[string]any{"max_events": 10}})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	require.Nil(t, poll["batch"])
}
