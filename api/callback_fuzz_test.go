package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

// FuzzCallbackRequest sends whole callback requests (body and the headers a
// carrier controls) to the real server on a real database: every request is
// answered 202, 200 or 4xx, never a 5xx, since the database and the S3 store
// are up and nothing a carrier sends may fail the server. A request with a
// header value no HTTP client sends (a control character other than tab),
// which the HTTP server would refuse itself, goes to the API's router
// directly, as another front end might pass it on. Every callback accepted
// (202, or 200 for a duplicate) has an ordering key and an event type that
// can be sent in a delivery's headers.
func FuzzCallbackRequest(f *testing.F) {
	f.Add([]byte(`{"tracking_no":"SF1","status":"delivered","merchant_id":"shop"}`), "", "", "", "", "application/json")
	f.Add([]byte(`{"tracking_no":"A\u0000B"}`), "", "", "", "", "application/json")
	f.Add([]byte(`{"tracking_no":"a"}`), "\xff\xfe", "", "", "", "application/json")
	f.Add([]byte(`{}`), "k1", "\xff\xfe", "\xc3", "shop\xff", "application/vnd.carrier+json")
	f.Add([]byte(`{"tracking_no":7,"status":"\ud800","merchant_id":"\u0000"}`), "k1", "", "", "", "application/json; charset=utf-8")
	// Control characters in the routing fields, from the body and from
	// the headers.
	f.Add([]byte(`{"tracking_no":"SF\r\nX-Injected: 1","status":"delivered"}`), "", "", "", "", "application/json")
	f.Add([]byte(`{"tracking_no":"SF1","status":"deliv\u007fered","merchant_id":"shop\u0001"}`), "", "", "", "", "application/json")
	f.Add([]byte("{\"tracking_no\":\"SF\x7f1\",\"status\":\"a\\u001fb\"}"), "", "", "", "", "application/json")
	f.Add([]byte(`{"tracking_no":"a\tb","status":"in\ttransit"}`), "", "", "", "", "application/json")
	f.Add([]byte(`{"tracking_no":"a"}`), "", "SF\r1", "ev\n", "", "application/json")
	f.Add([]byte(`{"tracking_no":"a"}`), "idem\x01", "k\x1f", "\x7f", "shop\r\n", "application/json")
	f.Add([]byte(`{"tracking_no":"a"}`), "", "k\t1", "a\tb", "", "application/json\r\n")
	b := setup(f, config{Ops: privateTargets, Config: api.Config{MaxBodyBytes: 64 << 10,
		Batcher: ingest.BatcherConfig{MaxWait: 50 * time.Microsecond}}})
	w := b.world(f)
	b.mustCreate(f, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	f.Fuzz(func(t *testing.T, body []byte, idem, orderingKey, eventType, merchant, contentType string) {
		req := httptest.NewRequest(http.MethodPost, b.URL+"/v1/callbacks", bytes.NewReader(body))
		req.RequestURI = ""
		req.Header = http.Header{}
		req.Header.Set("Authorization", "Bearer "+w.CarrierKey)
		viaClient := true
		for _, h := range [][2]string{{"Content-Type", contentType}, {"Idempotency-Key", idem}, {"X-Ordering-Key", orderingKey},
			{"X-Event-Type", eventType}, {"X-Merchant-Id", merchant}} {
			viaClient = viaClient && sendable(h[1])
			if h[1] != "" {
				req.Header.Set(h[0], h[1])
			}
		}
		var st int
		var answer []byte
		if viaClient {
			client := &http.Client{Timeout: 30 * time.Second, Transport: apitest.Wrap(t, nil)}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			answer, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			st = resp.StatusCode
		} else {
			rec := httptest.NewRecorder()
			b.Handler.ServeHTTP(rec, req)
			st, answer = rec.Code, rec.Body.Bytes()
		}
		switch {
		case st == http.StatusAccepted, st == http.StatusOK:
			var got api.CallbackResponse
			if err := json.Unmarshal(answer, &got); err != nil {
				t.Fatalf("answer %d %s: %v", st, answer, err)
			}
			// Decoded into the two fields only: the answer also holds the
			// payload, whose numbers need not fit a float64.
			resp := b.do(t, http.MethodGet, "/v1/messages/"+got.MessageID, adminToken, nil)
			var msg struct {
				OrderingKey string `json:"ordering_key"`
				EventType   string `json:"event_type"`
			}
			err := json.NewDecoder(resp.Body).Decode(&msg)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || err != nil {
				t.Fatalf("message %s: %d %v", got.MessageID, resp.StatusCode, err)
			}
			for _, v := range []string{msg.OrderingKey, msg.EventType} {
				if !sendable(v) {
					t.Fatalf("accepted %q, which cannot be sent in a header (body %q, headers %q %q %q %q %q)",
						v, body, idem, orderingKey, eventType, merchant, contentType)
				}
			}
		case st >= 400 && st < 500:
		default:
			t.Fatalf("status %d for body %q, headers %q %q %q %q %q: %s", st, body, idem, orderingKey, eventType, merchant, contentType, answer)
		}
	})
}

// sendable reports whether net/http sends v as a header value: no control
// characters other than tab.
func sendable(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
