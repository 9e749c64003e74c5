package api_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

// FuzzCallbackRequest sends whole callback requests (body and the headers a
// carrier controls) to the real server on a real database: every request is
// answered 202, 200 or 4xx, never a 5xx, since the database and the S3 store
// are up and nothing a carrier sends may fail the server.
func FuzzCallbackRequest(f *testing.F) {
	f.Add([]byte(`{"tracking_no":"SF1","status":"delivered","merchant_id":"shop"}`), "", "", "", "", "application/json")
	f.Add([]byte(`{"tracking_no":"A\u0000B"}`), "", "", "", "", "application/json")
	f.Add([]byte(`{"tracking_no":"a"}`), "\xff\xfe", "", "", "", "application/json")
	f.Add([]byte(`{}`), "k1", "\xff\xfe", "\xc3", "shop\xff", "application/vnd.carrier+json")
	f.Add([]byte(`{"tracking_no":7,"status":"\ud800","merchant_id":"\u0000"}`), "k1", "", "", "", "application/json; charset=utf-8")
	b := setup(f, config{Ops: privateTargets, Config: api.Config{MaxBodyBytes: 64 << 10,
		Batcher: ingest.BatcherConfig{MaxWait: 50 * time.Microsecond}}})
	w := b.world(f)
	b.mustCreate(f, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	f.Fuzz(func(t *testing.T, body []byte, idem, orderingKey, eventType, merchant, contentType string) {
		client := &http.Client{Timeout: 30 * time.Second, Transport: apitest.Wrap(t, nil)}
		req, err := http.NewRequest(http.MethodPost, b.URL+"/v1/callbacks", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+w.CarrierKey)
		for _, h := range [][2]string{{"Content-Type", contentType}, {"Idempotency-Key", idem}, {"X-Ordering-Key", orderingKey},
			{"X-Event-Type", eventType}, {"X-Merchant-Id", merchant}} {
			if !sendable(h[1]) {
				t.Skip("a header value no HTTP client sends (the server refuses it before any handler)")
			}
			if h[1] != "" {
				req.Header.Set(h[0], h[1])
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch st := resp.StatusCode; {
		case st == http.StatusAccepted, st == http.StatusOK:
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
