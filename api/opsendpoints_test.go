package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpsEndpointsAPI: create (secret shown once), list (no secrets),
// delete; admin only.
func TestOpsEndpointsAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	st, out := b.call(t, http.MethodPost, "/v1/ops-endpoints", adminToken, map[string]any{
		"url": "http://127.0.0.1:9/ops", "events": []string{"endpoint.disabled", "delivery.dead_lettered"}, "description": "on-call",
	})
	require.Equal(t, http.StatusCreated, st, "%v", out)
	require.Regexp(t, `^whsec_`, out["secret"])
	require.IsType(t, "", out["id"])
	require.Equal(t, []any{"endpoint.disabled", "delivery.dead_lettered"}, out["events"])
	id := out["id"].(string)
	all := b.mustCreate(t, "/v1/ops-endpoints", adminToken, map[string]any{"url": "http://127.0.0.1:9/all"})
	require.Equal(t, []any{}, all["events"], "empty: every event")

	st, out = b.call(t, http.MethodGet, "/v1/ops-endpoints", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	items := out["items"].([]any)
	require.Len(t, items, 2)
	for _, it := range items {
		require.NotContains(t, it.(map[string]any), "secret", "secrets are shown once")
	}
	require.Equal(t, "on-call", items[0].(map[string]any)["description"])

	for _, call := range []struct{ method, path string }{
		{http.MethodGet, "/v1/ops-endpoints"}, {http.MethodPost, "/v1/ops-endpoints"}, {http.MethodDelete, "/v1/ops-endpoints/" + id},
	} {
		st, _ := b.call(t, call.method, call.path, w.M1Key, map[string]any{"url": "http://127.0.0.1:9/x"})
		require.Equal(t, http.StatusForbidden, st, "%s %s with a merchant key", call.method, call.path)
	}

	st, _ = b.call(t, http.MethodDelete, "/v1/ops-endpoints/"+id, adminToken, nil)
	require.Equal(t, http.StatusNoContent, st)
	st, out = b.call(t, http.MethodDelete, "/v1/ops-endpoints/"+id, adminToken, nil)
	require.Equal(t, http.StatusNotFound, st)
	require.Equal(t, "not_found", errCode(out))
	st, out = b.call(t, http.MethodGet, "/v1/ops-endpoints", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 1)
}

// TestOpsEndpointsBadInput: every malformed request is a 400 with the error
// shape, and the endpoints' SSRF rule applies to the URL.
func TestOpsEndpointsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, config{})
	long := make([]byte, 501)
	for i := range long {
		long[i] = 'a'
	}
	for name, body := range map[string]any{
		"no url":            map[string]any{"events": []string{"endpoint.disabled"}},
		"not a url":         map[string]any{"url": "::nope"},
		"ftp":               map[string]any{"url": "ftp://example.com/x"},
		"loopback":          map[string]any{"url": "http://127.0.0.1:9/ops"},
		"loopback decimal":  map[string]any{"url": "http://2130706433/ops"},
		"metadata":          map[string]any{"url": "http://169.254.169.254/latest"},
		"private":           map[string]any{"url": "http://10.0.0.1/ops"},
		"localhost":         map[string]any{"url": "http://localhost/ops"},
		"credentials":       map[string]any{"url": "http://u:p@93.184.215.14/ops"},
		"unknown event":     map[string]any{"url": "http://93.184.215.14/ops", "events": []string{"endpoint.exploded"}},
		"duplicate event":   map[string]any{"url": "http://93.184.215.14/ops", "events": []string{"endpoint.enabled", "endpoint.enabled"}},
		"events not a list": map[string]any{"url": "http://93.184.215.14/ops", "events": "endpoint.enabled"},
		"long description":  map[string]any{"url": "http://93.184.215.14/ops", "description": string(long)},
		"control character": map[string]any{"url": "http://93.184.215.14/ops", "description": "a\x00b"},
		"unknown field":     map[string]any{"url": "http://93.184.215.14/ops", "secret": "whsec_mine"},
		"not json":          []byte("{"),
	} {
		st, out := b.call(t, http.MethodPost, "/v1/ops-endpoints", adminToken, body)
		require.Equal(t, http.StatusBadRequest, st, "%s: %v", name, out)
		require.Equal(t, "invalid", errCode(out), name)
		require.NotEmpty(t, out["error"], name)
	}
	st, out := b.call(t, http.MethodDelete, "/v1/ops-endpoints/abc", adminToken, nil)
	require.Equal(t, http.StatusNotFound, st, "a malformed id is an unknown one, as on every route: %v", out)
	st, out = b.call(t, http.MethodGet, "/v1/ops-endpoints", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Empty(t, out["items"], "nothing was stored")
}
