package apitest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/apitest"
)

// stub answers every request with status and body.
func stub(t *testing.T, status int, body string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// exchange sends one request through a checking transport and returns the
// mismatches it reported.
func exchange(t *testing.T, base, method, path, token, body string) []error {
	t.Helper()
	c, err := apitest.Default()
	require.NoError(t, err)
	var mu sync.Mutex
	var fails []error
	client := &http.Client{Transport: &apitest.Transport{Base: http.DefaultTransport, Checker: c, Fail: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fails = append(fails, err)
	}}}
	var rd *strings.Reader
	req, err := http.NewRequest(method, base+path, nil)
	if body != "" {
		rd = strings.NewReader(body)
		req, err = http.NewRequest(method, base+path, rd)
		req.Header.Set("Content-Type", "application/json")
	}
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return fails
}

const stats = `{"carriers":1,"merchants":2,"endpoints":{"enabled":3},"pending_deliveries":0,"pending_deliveries_capped":false,
"dead_letters":0,"dead_letters_capped":false,"messages_today_utc":5,"messages_today_utc_capped":false,"count_cap":100000%s}`

func TestDocumentLoads(t *testing.T) {
	c, err := apitest.Default()
	require.NoError(t, err)
	require.Equal(t, "3.1.0", c.Document().OpenAPI)
}

func TestCheckerAcceptsWhatTheDocumentSays(t *testing.T) {
	base := stub(t, http.StatusOK, strings.Replace(stats, "%s", "", 1))
	require.Empty(t, exchange(t, base, http.MethodGet, "/v1/stats", "hra_x", ""))
	base = stub(t, http.StatusNotFound, `{"error":{"code":"not_found","message":"Not Found"}}`)
	require.Empty(t, exchange(t, base, http.MethodGet, "/v1/nope", "", ""))
	// Bad input on purpose is fine as long as it is refused.
	base = stub(t, http.StatusBadRequest, `{"error":{"code":"invalid","message":"name is required"}}`)
	require.Empty(t, exchange(t, base, http.MethodPost, "/v1/carriers", "hra_x", `{"nam":"x"}`))
}

// The checker catches a server that drifted from the document.
func TestCheckerCatchesDrift(t *testing.T) {
	cases := []struct {
		name, method, path, token, body string
		status                          int
		answer, want                    string
	}{
		{"undocumented field", http.MethodGet, "/v1/stats", "hra_x", "", 200,
			strings.Replace(stats, "%s", `,"uptime":3`, 1), "uptime"},
		{"wrong type", http.MethodGet, "/v1/stats", "hra_x", "", 200,
			strings.Replace(strings.Replace(stats, `"carriers":1`, `"carriers":"1"`, 1), "%s", "", 1), "carriers"},
		{"missing field", http.MethodGet, "/v1/carriers", "hra_x", "", 200, `{"items":[]}`, "next_cursor"},
		{"undocumented status", http.MethodPost, "/v1/merchants", "hra_x", `{"name":"m"}`, 200,
			`{"id":"1","name":"m","api_key":"hrm_x","api_key_prefix":"hrm_x","created_at":"2026-01-01T00:00:00Z"}`, "200"},
		{"error shape", http.MethodGet, "/v1/stats", "hra_x", "", 500, `{"error":"boom"}`, "500"},
		{"undocumented route", http.MethodGet, "/v1/secret-admin", "hra_x", "", 200, `{}`, "not in the OpenAPI document"},
		{"refused request accepted", http.MethodPost, "/v1/merchants", "hra_x", `{"name":"m","colour":"red"}`, 201,
			`{"id":"1","name":"m","api_key":"hrm_x","api_key_prefix":"hrm_x","created_at":"2026-01-01T00:00:00Z"}`, "refuses"},
		{"no token accepted", http.MethodGet, "/v1/stats", "", "", 200, strings.Replace(stats, "%s", "", 1), "refuses"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := stub(t, tc.status, tc.answer)
			fails := exchange(t, base, tc.method, tc.path, tc.token, tc.body)
			require.Len(t, fails, 1)
			require.Contains(t, fails[0].Error(), tc.want)
		})
	}
}
