package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/apitest"
)

// ingestCall sends a JSON request to a running serve and decodes the answer.
func ingestCall(t *testing.T, s *testServer, method, path, token string, body any, hdr ...string) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	if raw, ok := body.([]byte); ok {
		rd = bytes.NewReader(raw)
	} else if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := apitest.Client(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	}
	return resp.StatusCode, resp.Header, out
}

// The whole flow of docs/api.md through `hookrelay serve --roles api`:
// carrier, merchant, endpoint, callbacks (inline and offloaded), metrics.
func TestServeAPIFlow(t *testing.T) {
	t.Parallel()
	s := startServe(t, map[string]string{"HOOKRELAY_OFFLOAD_BYTES": "64"}, "--roles", "api")
	const admin = "hra_test_admin_token_0123456789"

	st, _, carrier := ingestCall(t, s, http.MethodPost, "/v1/carriers", admin, map[string]any{"name": "sf"})
	require.Equal(t, http.StatusCreated, st, "%v", carrier)
	st, _, merchant := ingestCall(t, s, http.MethodPost, "/v1/merchants", admin, map[string]any{"name": "shop"})
	require.Equal(t, http.StatusCreated, st)
	st, _, ep := ingestCall(t, s, http.MethodPost, "/v1/endpoints", merchant["api_key"].(string),
		map[string]any{"url": "http://127.0.0.1:9/hook", "event_types": []string{"delivered"}})
	require.Equal(t, http.StatusCreated, st, "%v", ep)

	ck := carrier["api_key"].(string)
	st, _, out := ingestCall(t, s, http.MethodPost, "/v1/callbacks", ck, []byte(`{"tracking_no":"SF1","status":"delivered"}`))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, float64(1), out["deliveries"])
	st, _, out = ingestCall(t, s, http.MethodPost, "/v1/callbacks", ck,
		[]byte(`{"tracking_no":"SF1","status":"delivered","pad":"`+strings.Repeat("x", 200)+`"}`))
	require.Equal(t, http.StatusAccepted, st, "offloaded to the embedded S3 store: %v", out)

	// The one error handler serves every route, also the service's own.
	st, _, out = ingestCall(t, s, http.MethodGet, "/v1/stats", ck, nil)
	require.Equal(t, http.StatusForbidden, st)
	require.Equal(t, "forbidden", out["error"].(map[string]any)["code"])
	st, _, out = ingestCall(t, s, http.MethodGet, "/nope", "", nil)
	require.Equal(t, http.StatusNotFound, st)
	require.Equal(t, "not_found", out["error"].(map[string]any)["code"])

	st, _, stats := ingestCall(t, s, http.MethodGet, "/v1/stats", admin, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(2), stats["messages_today_utc"])

	resp, err := http.Get(s.URL + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	for _, m := range []string{"hookrelay_ingest_requests_total", "hookrelay_ingest_callbacks_total 2",
		"hookrelay_ingest_batch_size", "hookrelay_ingest_commit_seconds", "hookrelay_ingest_offloaded_total 1"} {
		require.Contains(t, string(metrics), m)
	}
	require.NoError(t, s.Stop(t))
	logs := s.Logs.String()
	require.NotContains(t, logs, ck, "keys never reach the logs")
	require.NotContains(t, logs, merchant["api_key"].(string))
}
