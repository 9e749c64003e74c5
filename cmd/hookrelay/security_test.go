package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/apitest"
)

// secAdminToken is the admin token of every security test's server.
const secAdminToken = "hra_test_admin_token_0123456789"

// secAPI calls a test server's public API. It never follows redirects.
type secAPI struct {
	t    *testing.T
	base string
	http *http.Client
	// errorBodies collects the body of every non-2xx answer, for the check
	// that no secret leaks into error messages.
	errorBodies []string
}

func newSecAPI(t *testing.T, base string) *secAPI {
	c := &secAPI{t: t, base: base, http: &http.Client{
		Transport:     apitest.Wrap(t, &http.Transport{}),
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	t.Cleanup(c.http.CloseIdleConnections)
	return c
}

// do sends method path with token (none when empty) and a JSON body (none
// when nil) and returns the status and the body.
func (c *secAPI) do(method, path, token string, body any, headers ...string) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(c.t, err)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	require.NoError(c.t, err)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	require.NoError(c.t, err, "%s %s", method, path)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	if resp.StatusCode >= 300 {
		c.errorBodies = append(c.errorBodies, string(data))
	}
	return resp.StatusCode, data
}

// mustJSON sends a request that must answer want and decodes the answer.
func (c *secAPI) mustJSON(want int, method, path, token string, body any) map[string]any {
	c.t.Helper()
	st, data := c.do(method, path, token, body)
	require.Equal(c.t, want, st, "%s %s: %s", method, path, data)
	var out map[string]any
	require.NoError(c.t, json.Unmarshal(data, &out), "%s %s: %s", method, path, data)
	return out
}

// secSink is a merchant endpoint on loopback that answers status and counts
// what it received.
type secSink struct {
	*httptest.Server
	status atomic.Int32
	hits   atomic.Int64
	mu     sync.Mutex
	bodies []string // guarded by mu
}

func newSecSink(t *testing.T, status int) *secSink {
	s := &secSink{}
	s.status.Store(int32(status))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		var hdr strings.Builder
		_ = r.Header.Write(&hdr)
		s.mu.Lock()
		s.bodies = append(s.bodies, hdr.String()+"\n"+string(b))
		s.mu.Unlock()
		w.WriteHeader(int(s.status.Load()))
	}))
	t.Cleanup(s.Close)
	return s
}

// received returns the headers and bodies the sink received so far.
func (s *secSink) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// secFixture is a running server with an admin token, a carrier, two
// merchants (A and B), an endpoint of A on a loopback sink and one delivery
// of it.
type secFixture struct {
	srv        *testServer
	api        *secAPI
	sink       *secSink
	carrierKey string
	carrierID  string
	merchantA  string // key
	merchantB  string // key
	merchantAID,
	merchantBID string
	endpointA   string // id
	endpointB   string // id of B's endpoint
	deliveryA   string // id of a delivery to endpointA
	messageID   string // the message of deliveryA
	carrierName string
}

func secIDOf(t *testing.T, m map[string]any) string {
	t.Helper()
	id, ok := m["id"].(string)
	require.True(t, ok, "id is not a JSON string: %v", m)
	return id
}

func newSecFixture(t *testing.T, env map[string]string) *secFixture {
	t.Helper()
	f := &secFixture{srv: startServe(t, env)}
	f.api = newSecAPI(t, f.srv.URL)
	f.sink = newSecSink(t, http.StatusNoContent)
	f.carrierName = "sec-carrier"
	c := f.api.mustJSON(http.StatusCreated, "POST", "/v1/carriers", secAdminToken, map[string]any{
		"name": f.carrierName, "ordering_key_field": "tracking_no", "event_type_field": "status", "merchant_field": "merchant_id",
	})
	f.carrierID, f.carrierKey = secIDOf(t, c), c["api_key"].(string)
	a := f.api.mustJSON(http.StatusCreated, "POST", "/v1/merchants", secAdminToken, map[string]any{"name": "merchant-a"})
	f.merchantAID, f.merchantA = secIDOf(t, a), a["api_key"].(string)
	b := f.api.mustJSON(http.StatusCreated, "POST", "/v1/merchants", secAdminToken, map[string]any{"name": "merchant-b"})
	f.merchantBID, f.merchantB = secIDOf(t, b), b["api_key"].(string)
	ea := f.api.mustJSON(http.StatusCreated, "POST", "/v1/endpoints", f.merchantA, map[string]any{"url": f.sink.URL + "/a"})
	f.endpointA = secIDOf(t, ea)
	eb := f.api.mustJSON(http.StatusCreated, "POST", "/v1/endpoints", f.merchantB, map[string]any{"url": f.sink.URL + "/b"})
	f.endpointB = secIDOf(t, eb)
	cb := f.api.mustJSON(http.StatusAccepted, "POST", "/v1/callbacks", f.carrierKey,
		map[string]any{"tracking_no": "SEC-1", "status": "picked_up"})
	require.NotEmpty(t, cb["message_id"])
	require.EqualValues(t, 2, cb["deliveries"], "the callback should match A's and B's endpoints: %v", cb)
	f.messageID, _ = cb["message_id"].(string)
	// The delivery id of endpoint A (delivered or not, it is listed).
	require.Eventually(t, func() bool {
		for _, status := range []string{"", "?status=delivered", "?status=pending"} {
			st, data := f.api.do("GET", "/v1/endpoints/"+f.endpointA+"/deliveries"+status, f.merchantA, nil)
			if st != http.StatusOK {
				continue
			}
			var list struct {
				Items []map[string]any `json:"items"`
			}
			if json.Unmarshal(data, &list) == nil && len(list.Items) > 0 {
				f.deliveryA = secIDOf(t, list.Items[0])
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "no delivery listed for endpoint A")
	return f
}

// secPrincipal names a caller of the auth matrix.
type secPrincipal string

const (
	pNone     secPrincipal = "no key"
	pAdmin    secPrincipal = "admin"
	pCarrier  secPrincipal = "carrier"
	pMerchA   secPrincipal = "merchant A"
	pMerchB   secPrincipal = "merchant B"
	pBadToken secPrincipal = "unknown key"
)

func (f *secFixture) token(p secPrincipal) string {
	switch p {
	case pAdmin:
		return secAdminToken
	case pCarrier:
		return f.carrierKey
	case pMerchA:
		return f.merchantA
	case pMerchB:
		return f.merchantB
	case pBadToken:
		return "hrm_this_key_does_not_exist_0000000000"
	}
	return ""
}

// Expected outcome classes of the auth matrix.
const (
	authOK      = "ok"      // 2xx
	authUnauth  = "401"     // no or unknown key
	authDenied  = "403"     // a valid key of the wrong kind
	authHidden  = "404"     // another merchant's object
	authAllowed = "allowed" // authorised: any answer but 401/403/404/5xx (state decides)
)

func secCheckClass(t *testing.T, class string, st int, msg string) {
	t.Helper()
	switch class {
	case authOK:
		require.True(t, st >= 200 && st < 300, "%s: want 2xx, got %d", msg, st)
	case authUnauth:
		require.Equal(t, http.StatusUnauthorized, st, msg)
	case authDenied:
		require.Equal(t, http.StatusForbidden, st, msg)
	case authHidden:
		require.Equal(t, http.StatusNotFound, st, msg)
	case authAllowed:
		require.NotContains(t, []int{401, 403, 404}, st, msg)
		require.Less(t, st, 500, msg)
	default:
		t.Fatalf("bad class %q", class)
	}
}

// TestAuthMatrix calls every route of docs/api.md as every kind of caller and
// checks the status: no key or an unknown key is 401, a key of the wrong
// kind 403, another merchant's object 404, the right key succeeds.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	// An unknown key on every route from one address, which no success
	// forgives: room for them all (the throttle is tested on its own).
	f := newSecFixture(t, map[string]string{"HOOKRELAY_AUTH_THROTTLE_FREE": "1000"})

	type route struct {
		method, path string
		body         func(p secPrincipal) any
		want         map[secPrincipal]string // missing principals: see defaults below
	}
	ep := func() string { return "/v1/endpoints/" + f.endpointA }
	// A fresh endpoint of A for each destructive call.
	freshA := func() string {
		e := f.api.mustJSON(http.StatusCreated, "POST", "/v1/endpoints", f.merchantA, map[string]any{"url": f.sink.URL + "/tmp"})
		return "/v1/endpoints/" + secIDOf(t, e)
	}
	adminOnly := map[secPrincipal]string{pAdmin: authOK, pCarrier: authDenied, pMerchA: authDenied, pMerchB: authDenied}
	merchantObj := map[secPrincipal]string{pAdmin: authOK, pCarrier: authDenied, pMerchA: authOK, pMerchB: authHidden}
	routes := []route{
		{"POST", "/v1/carriers", func(secPrincipal) any {
			return map[string]any{"name": fmt.Sprintf("c-%d", time.Now().UnixNano()), "ordering_key_field": "tracking_no"}
		}, adminOnly},
		{"GET", "/v1/carriers", nil, adminOnly},
		{"POST", "/v1/merchants", func(secPrincipal) any { return map[string]any{"name": "m"} }, adminOnly},
		{"GET", "/v1/merchants", nil, adminOnly},
		{"GET", "/v1/stats", nil, adminOnly},
		{"GET", "/v1/dead-letters", nil, adminOnly},
		{"POST", "/v1/dead-letters/retry", func(secPrincipal) any { return map[string]any{"ids": []string{"999999999"}} }, adminOnly},
		{"POST", "/v1/dead-letters/discard", func(secPrincipal) any { return map[string]any{"ids": []string{"999999999"}} }, adminOnly},

		{"POST", "/v1/endpoints", func(p secPrincipal) any {
			if p == pAdmin {
				return map[string]any{"url": f.sink.URL + "/new", "merchant_id": f.merchantAID}
			}
			return map[string]any{"url": f.sink.URL + "/new"}
		}, map[secPrincipal]string{pAdmin: authOK, pCarrier: authDenied, pMerchA: authOK, pMerchB: authOK}},
		{"GET", "/v1/endpoints", nil, map[secPrincipal]string{pAdmin: authAllowed, pCarrier: authDenied, pMerchA: authOK, pMerchB: authOK}},
		{"GET", "", nil, merchantObj}, // GET /v1/endpoints/{A}
		{"PATCH", "", func(secPrincipal) any { return map[string]any{"description": "patched"} }, merchantObj},
		{"POST", "/enable", nil, merchantObj},
		{"POST", "/disable", nil, merchantObj},
		{"POST", "/enable", nil, merchantObj}, // leave it enabled
		{"POST", "/rotate-secret", nil, merchantObj},
		{"POST", "/test", nil, merchantObj},
		{"GET", "/deliveries", nil, merchantObj},
		{"DELETE", "fresh", nil, merchantObj},
		{"GET", "delivery", nil, merchantObj},
		{"POST", "delivery/retry", nil, map[secPrincipal]string{pAdmin: authAllowed, pCarrier: authDenied, pMerchA: authAllowed, pMerchB: authHidden}},

		{"POST", "/v1/callbacks", func(secPrincipal) any { return map[string]any{"tracking_no": "SEC-2", "status": "x"} },
			map[secPrincipal]string{pAdmin: authDenied, pCarrier: authOK, pMerchA: authDenied, pMerchB: authDenied}},
	}
	for _, r := range routes {
		for _, p := range []secPrincipal{pNone, pBadToken, pAdmin, pCarrier, pMerchA, pMerchB} {
			path := r.path
			switch {
			case path == "" || strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "/v1/"):
				path = ep() + path
			case path == "fresh":
				path = freshA()
			case path == "delivery":
				path = "/v1/deliveries/" + f.deliveryA
			case path == "delivery/retry":
				path = "/v1/deliveries/" + f.deliveryA + "/retry"
			}
			want := r.want[p]
			if p == pNone || p == pBadToken {
				want = authUnauth
			}
			var body any
			if r.body != nil {
				body = r.body(p)
			}
			st, data := f.api.do(r.method, path, f.token(p), body)
			secCheckClass(t, want, st, fmt.Sprintf("%s %s as %s (body %s)", r.method, path, p, data))
		}
	}

	// Listing shows only one's own objects.
	_, data := f.api.do("GET", "/v1/endpoints", f.merchantB, nil)
	require.NotContains(t, string(data), `"`+f.endpointA+`"`, "merchant B's list shows A's endpoint")
	st, _ := f.api.do("GET", "/v1/endpoints/"+f.endpointB+"/deliveries", f.merchantA, nil)
	require.Equal(t, http.StatusNotFound, st, "merchant A lists B's deliveries")
	// A merchant naming another merchant in the body does not create for it.
	st, data = f.api.do("POST", "/v1/endpoints", f.merchantB, map[string]any{"url": f.sink.URL + "/x", "merchant_id": f.merchantAID})
	if st == http.StatusCreated {
		var e map[string]any
		require.NoError(t, json.Unmarshal(data, &e))
		st, _ = f.api.do("GET", "/v1/endpoints/"+secIDOf(t, e), f.merchantA, nil)
		require.Equal(t, http.StatusNotFound, st, "merchant B created an endpoint for merchant A")
	}

	// Service routes need no key.
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		st, _ = f.api.do("GET", path, "", nil)
		require.Equal(t, http.StatusOK, st, path)
	}
	// The error body has the documented shape.
	st, data = f.api.do("GET", "/v1/carriers", "", nil)
	require.Equal(t, http.StatusUnauthorized, st)
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(data, &e), "%s", data)
	require.NotEmpty(t, e.Error.Code)
	require.NotEmpty(t, e.Error.Message)
}
