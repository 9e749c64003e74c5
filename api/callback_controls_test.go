package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// serve sends a callback to the API's router directly, past the HTTP
// server's own check of header values, and returns the status and answer.
func (b *bundle) serve(t testing.TB, token string, body []byte, hdr ...string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/callbacks", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header[hdr[i]] = []string{hdr[i+1]}
	}
	rec := httptest.NewRecorder()
	b.Handler.ServeHTTP(rec, req)
	var out map[string]any
	if rec.Body.Len() > 0 {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), "body %s", rec.Body)
	}
	return rec.Code, out
}

// The ordering key and event type of a callback go into every delivery's
// headers (X-Hookrelay-Ordering-Key, X-Hookrelay-Event-Type): one holding a
// control character other than tab (U+0000 to U+001F, U+007F) could never
// be sent, so it is a 400 naming the field and the character, from a body
// field or a header, and nothing is stored. A tab, non-ASCII letters and a
// merchant reference (never sent in a header) are accepted as before.
func TestCallbackControlCharactersAre400(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	controls := map[string]string{"CR": "\r", "LF": "\n", "DEL": "\x7f", "U+0001": "\x01", "U+001F": "\x1f", "CRLF": "\r\nX-Injected: 1"}
	names := map[string]string{"CR": "U+000D", "LF": "U+000A", "DEL": "U+007F", "U+0001": "U+0001", "U+001F": "U+001F", "CRLF": "U+000D"}
	refused := 0
	for what, c := range controls {
		esc, err := json.Marshal("a" + c + "b") // "a\rb", "a\u007fb", ...
		require.NoError(t, err)
		cases := []struct {
			name  string
			body  string
			hdr   []string
			field string
		}{
			{"ordering key body field", fmt.Sprintf(`{"tracking_no":%s}`, esc), nil, `ordering key (body field "tracking_no")`},
			{"event type body field", fmt.Sprintf(`{"tracking_no":"k","status":%s}`, esc), nil, `event type (body field "status")`},
			{"X-Ordering-Key header", `{"tracking_no":"k"}`, []string{"X-Ordering-Key", "a" + c + "b"}, "X-Ordering-Key header"},
			{"X-Event-Type header", `{"tracking_no":"k"}`, []string{"X-Event-Type", "a" + c + "b"}, "X-Event-Type header"},
		}
		if c == "\x7f" {
			// DEL may also stand raw in a JSON string.
			cases = append(cases, struct {
				name  string
				body  string
				hdr   []string
				field string
			}{"raw DEL in the ordering key body field", "{\"tracking_no\":\"a\x7fb\"}", nil, `"tracking_no"`})
		}
		for _, tc := range cases {
			st, out := b.serve(t, w.CarrierKey, []byte(tc.body), tc.hdr...)
			require.Equal(t, http.StatusBadRequest, st, "%s in the %s: %v", what, tc.name, out)
			require.Equal(t, "invalid", errCode(out), tc.name)
			msg := out["error"].(map[string]any)["message"].(string)
			require.Contains(t, msg, tc.field, "%s in the %s", what, tc.name)
			require.Contains(t, msg, "control character "+names[what], "%s in the %s", what, tc.name)
			refused++
		}
	}
	require.Equal(t, 25, refused)
	require.Equal(t, float64(0), b.stats(t)["messages_today_utc"], "nothing of a refused callback is stored")

	// Still accepted: a tab, non-ASCII letters, and control characters in
	// the merchant reference, which only routes.
	accepted := []struct {
		name string
		body string
		hdr  []string
	}{
		{"tab in the ordering key body field", `{"tracking_no":"a\tb"}`, nil},
		{"tab in the event type body field", `{"tracking_no":"k","status":"in\ttransit"}`, nil},
		{"tab in X-Ordering-Key", `{"tracking_no":"k"}`, []string{"X-Ordering-Key", "a\tb"}},
		{"tab in X-Event-Type", `{"tracking_no":"k"}`, []string{"X-Event-Type", "a\tb"}},
		{"non-ASCII ordering key and event type", `{"tracking_no":"顺丰-ñ-№1","status":"已签收"}`, nil},
		{"non-ASCII X-Ordering-Key and X-Event-Type", `{"tracking_no":"k"}`, []string{"X-Ordering-Key", "顺丰-ñ", "X-Event-Type", "已签收"}},
		{"control character in the merchant reference", `{"tracking_no":"k","merchant_id":"m\u0001\r"}`, nil},
	}
	for _, tc := range accepted {
		st, out := b.serve(t, w.CarrierKey, []byte(tc.body), tc.hdr...)
		require.Equal(t, http.StatusAccepted, st, "%s: %v", tc.name, out)
	}
	require.Equal(t, float64(len(accepted)), b.stats(t)["messages_today_utc"])

	// Through the real HTTP server a control character in a header value
	// never reaches the API: the server answers 400 itself.
	u, err := url.Parse(b.URL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/callbacks HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nX-Ordering-Key: a\x01b\r\nContent-Length: 2\r\n\r\n{}", u.Host, w.CarrierKey)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, readAnswer(t, conn).StatusCode)
	require.Equal(t, float64(len(accepted)), b.stats(t)["messages_today_utc"])
}

// A carrier's name is sent as X-Hookrelay-Carrier with each of its
// deliveries: one holding a control character is refused when created.
func TestCarrierNameControlCharactersAre400(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	for _, name := range []string{"sf\r\nX-Injected: 1", "sf\n", "sf\x7f", "\x01sf", "s\x1ff"} {
		st, out := b.call(t, http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": name})
		require.Equal(t, http.StatusBadRequest, st, "%q: %v", name, out)
		require.Equal(t, "invalid", errCode(out))
		require.Contains(t, out["error"].(map[string]any)["message"], "name holds the control character U+00")
	}
	require.Equal(t, float64(0), b.stats(t)["carriers"])
	b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "顺丰\tExpress"})
}
