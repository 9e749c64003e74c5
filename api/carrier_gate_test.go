package api_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

// TestCarrierMaxInFlight: a carrier with more callbacks being read at once
// than CarrierMaxInFlight has the others wait for a slot; one that waits
// longer than CarrierWait is 429 rate_limited with Retry-After, in the
// carrier's refusal log; one whose slot frees in time is taken. Another
// carrier's callbacks do not wait meanwhile.
func TestCarrierMaxInFlight(t *testing.T) {
	t.Parallel()
	const wait = 500 * time.Millisecond
	b := setup(t, config{Ops: privateTargets, Config: api.Config{CarrierMaxInFlight: 2, CarrierWait: wait}})
	w := b.world(t)
	other := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "other"})
	const inFlight = "hookrelay_ingest_body_bytes_in_flight"

	const size = 1000
	bodyOf := func(k int) []byte {
		head := fmt.Sprintf(`{"tracking_no":"gate-%d","pad":"`, k)
		return []byte(head + strings.Repeat("g", size-len(head)-2) + `"}`)
	}
	// Two uploads that stop one byte short hold the carrier's two slots.
	held := make([][]byte, 2)
	conns := make([]net.Conn, 2)
	last := 0.0
	for k := range held {
		held[k] = bodyOf(k)
		conn := b.rawCallback(t, w.CarrierKey, size, held[k][:size-1])
		conns[k] = conn
		// Read (its buffer counted): it holds a slot.
		require.Eventually(t, func() bool {
			v := metricValue(t, b.Registry, inFlight)
			if v > last {
				last = v
				return true
			}
			return false
		}, 10*time.Second, 10*time.Millisecond, "upload %d", k)
	}

	send := func(key string, k int) *http.Response {
		req, err := http.NewRequest(http.MethodPost, b.URL+"/v1/callbacks", strings.NewReader(string(bodyOf(k))))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := apitest.Client(t).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}

	// Another carrier: taken at once.
	start := time.Now()
	require.Equal(t, http.StatusAccepted, send(other["api_key"].(string), 10).StatusCode)
	require.Less(t, time.Since(start), wait, "another carrier's callback waited")

	// A third of the carrier's: waits its CarrierWait, then 429.
	start = time.Now()
	resp := send(w.CarrierKey, 11)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.GreaterOrEqual(t, time.Since(start), wait)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	r := b.waitRefusal(t, w.CarrierID, "rate_limited")
	require.Contains(t, r["message"], "callbacks in flight")

	// A fourth waits for a slot, which the end of a held upload frees.
	answer := make(chan int, 1)
	go func() { answer <- send(w.CarrierKey, 12).StatusCode }()
	_, err := conns[0].Write(held[0][size-1:])
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, <-answer)
}
