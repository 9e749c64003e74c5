package ingest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
)

// TestExcerptHeadersDropCredentials: no header that may carry a credential
// is kept; values are cut and made text-safe.
func TestExcerptHeadersDropCredentials(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	for _, name := range []string{"Authorization", "X-Api-Key", "X-Signature", "Webhook-Signature", "Cookie", "Proxy-Authorization", "X-Auth-Token", "X-Client-Secret"} {
		h.Set(name, "credential")
	}
	h.Set("Idempotency-Key", "k1")
	h.Set("X-Ordering-Key", "SF1")
	h.Set("User-Agent", strings.Repeat("é", 300)+"\x00")
	got := ExcerptHeaders(h)
	require.Equal(t, "k1", got["Idempotency-Key"])
	require.Equal(t, "SF1", got["X-Ordering-Key"])
	require.Len(t, got, 3)
	require.LessOrEqual(t, len(got["User-Agent"]), excerptHeaderBytes)
	require.True(t, strings.HasSuffix(got["User-Agent"], "é"), "cut inside a character")

	require.Equal(t, "a\u2400b\uFFFD", TextSafe("a\x00b\xff", 100))
}

// TestWatchCarrierLabelsBounded: the first CarrierLabels carriers get a
// label of their own, the others share "other", a refusal of no carrier
// "unknown".
func TestWatchCarrierLabelsBounded(t *testing.T) {
	t.Parallel()
	w := NewWatch(WatchConfig{CarrierLabels: 2}, nil, nil, nil)
	for id := int64(1); id <= 4; id++ {
		w.Accepted(id, time.Millisecond)
	}
	w.Refused(0, http.Header{}, hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "invalid API key"))
	value := func(labels ...string) float64 {
		var m dto.Metric
		require.NoError(t, w.m.callbacks.WithLabelValues(labels...).Write(&m))
		return m.GetCounter().GetValue()
	}
	require.Equal(t, 1.0, value("1", "accepted"))
	require.Equal(t, 1.0, value("2", "accepted"))
	require.Equal(t, 2.0, value("other", "accepted"))
	require.Equal(t, 1.0, value("unknown", "auth"))
	ch := make(chan prometheus.Metric, 10)
	w.m.callbacks.Collect(ch)
	require.Len(t, ch, 5, "series (unknown has an accepted series at 0)")
}

// BenchmarkWatchRefused is what recording a refusal costs the request:
// the body excerpt (WithBody) and Refused, stored (within the caps) or
// only counted (beyond them).
func BenchmarkWatchRefused(b *testing.B) {
	body := []byte(`{"tracking_no": "SF1234567890", "status": "picked_up", "merchant_id": "shop-one", ` + strings.Repeat(`"x": 1, `, 300))
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"carrier-client/1.0"}, "Authorization": {"Bearer hrc_x"}, "Idempotency-Key": {"abc"}}
	refusal := hookrelay.WithReason(hookrelay.Errorf(hookrelay.EINVALID, "body must be one valid JSON object"), hookrelay.ReasonParse)
	for _, c := range []struct {
		name string
		cap  int
	}{{"stored", 1 << 30}, {"counted", 1}} {
		b.Run(c.name, func(b *testing.B) {
			w := NewWatch(WatchConfig{PerMinute: c.cap, PerDay: c.cap, MaxPending: 1 << 30}, nil, nil, prometheus.NewRegistry())
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w.Refused(7, h, w.WithBody(7, refusal, body))
				if i%flushBatch == flushBatch-1 {
					w.mu.Lock()
					w.pending = w.pending[:0] // what a flush takes away
					w.mu.Unlock()
				}
			}
		})
	}
}

// BenchmarkWatchAccepted is what counting an accepted callback costs.
func BenchmarkWatchAccepted(b *testing.B) {
	w := NewWatch(WatchConfig{}, nil, nil, prometheus.NewRegistry())
	b.ReportAllocs()
	for b.Loop() {
		w.Accepted(7, 3*time.Millisecond)
	}
}

// TestQuotaRefusalReason: a callback over its carrier's share of a
// saturated intake is refused as quota (429), not as its rate.
func TestQuotaRefusalReason(t *testing.T) {
	t.Parallel()
	q := newCarrierQuota(1)
	require.NoError(t, q.take(1))
	err := q.take(1)
	require.Equal(t, hookrelay.ReasonQuota, hookrelay.ReasonOf(err))
	require.Equal(t, http.StatusTooManyRequests, hookrelay.HTTPStatus(err))
}
