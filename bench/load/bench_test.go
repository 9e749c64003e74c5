package load

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkSinkDelivery is the sink's cost per delivery (signature check,
// payload scan, ledger record) without the network: the share of the bench
// process in the CPU figures of docs/benchmarks.md. Each op also builds and
// signs the payload, as the service would.
func BenchmarkSinkDelivery(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s := &Sink{cfg: SinkConfig{Now: time.Now}, keys: map[int][]byte{0: key}, ledgers: map[int]*Ledger{}}
	s.bufs.New = func() any { return new(bytes.Buffer) }
	_ = s.SetSecret(0, "whsec_"+base64.StdEncoding.EncodeToString(key))
	l := NewLedger(10000, func(int) []int { return []int{0} })
	s.SetLedger(1, l)
	pad := strings.Repeat("x", 2000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		body := buildPayload(1, i%10000, i/10000+1, "m1", 1200, pad)
		req := httptest.NewRequest(http.MethodPost, "/e/0", bytes.NewReader(body))
		req.Header.Set("webhook-id", "msg_1")
		req.Header.Set("webhook-timestamp", "1700000000")
		req.Header.Set("webhook-signature", Sign(key, "msg_1", "1700000000", body))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent {
			b.Fatalf("status %d", w.Code)
		}
	}
}
