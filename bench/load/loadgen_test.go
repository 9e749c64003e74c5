package load

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// carrierStub is a stand-in for POST /v1/callbacks that checks what the load
// generator promises: one request in flight per key, seqs ascending by one,
// the routing fields present; every 7th request is answered 503.
type carrierStub struct {
	mu       sync.Mutex
	inFlight map[int]bool // guarded by mu
	lastSeq  map[int]int  // guarded by mu
	calls    int          // guarded by mu
	problems []string     // guarded by mu
	sizes    map[int]int  // body size → count; guarded by mu
}

func (c *carrierStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p struct {
		Phase    int    `json:"phase"`
		Key      int    `json:"key"`
		Seq      int    `json:"seq"`
		Tracking string `json:"tracking_no"`
		Merchant string `json:"merchant_id"`
	}
	c.mu.Lock()
	c.calls++
	n := c.calls
	if err := json.Unmarshal(body, &p); err != nil || p.Tracking == "" || p.Merchant != "m1" || r.Header.Get("Authorization") != "Bearer ck" {
		c.problems = append(c.problems, "bad request: "+string(body[:min(len(body), 80)]))
	}
	if c.inFlight[p.Key] {
		c.problems = append(c.problems, "key sent twice concurrently")
	}
	if p.Seq != c.lastSeq[p.Key]+1 {
		c.problems = append(c.problems, "seq out of order")
	}
	c.inFlight[p.Key] = true
	c.lastSeq[p.Key] = p.Seq
	c.sizes[len(body)]++
	c.mu.Unlock()

	time.Sleep(time.Millisecond) // widen the window for a second request of the same key
	c.mu.Lock()
	c.inFlight[p.Key] = false
	c.mu.Unlock()
	if n%7 == 0 {
		http.Error(w, `{"error":{"code":"unavailable"}}`, http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"message_id":"1","deliveries":1,"duplicate":false}`))
}

func TestRunLoadOneRequestPerKeyAndStopsAtMaxAcked(t *testing.T) {
	t.Parallel()
	stub := &carrierStub{inFlight: map[int]bool{}, lastSeq: map[int]int{}, sizes: map[int]int{}}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	l := NewLedger(3, func(int) []int { return []int{0} })
	res, err := RunLoad(context.Background(), LoadConfig{
		BaseURL: srv.URL, CarrierKey: "ck", Phase: 1, Keys: 3, MerchantOf: func(int) string { return "m1" },
		SmallBytes: 300, LargeBytes: 3000, LargeFraction: 0.3, MaxAcked: 60, Concurrency: 8,
		Client: srv.Client(), Ledger: l,
	})
	require.NoError(t, err)
	stub.mu.Lock()
	defer stub.mu.Unlock()
	require.Empty(t, stub.problems)
	require.GreaterOrEqual(t, res.Acked, int64(60))
	require.LessOrEqual(t, res.Acked, int64(60+3), "at most one extra per key in flight")
	require.Equal(t, int64(stub.calls), res.Sent)
	require.Equal(t, res.Sent-res.Acked, res.Statuses[http.StatusServiceUnavailable])
	exp, _ := l.Progress()
	require.Equal(t, res.Acked, exp, "every acknowledgement reached the ledger")
	require.Equal(t, int(res.Acked), l.Analyze().Acknowledged)
	require.Len(t, stub.sizes, 2, "two payload sizes: %v", stub.sizes)
	require.Contains(t, stub.sizes, 300)
	require.Contains(t, stub.sizes, 3000)
}

func TestRunLoadPacedStopsAtDuration(t *testing.T) {
	t.Parallel()
	stub := &carrierStub{inFlight: map[int]bool{}, lastSeq: map[int]int{}, sizes: map[int]int{}}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	l := NewLedger(50, func(int) []int { return []int{0} })
	res, err := RunLoad(context.Background(), LoadConfig{
		BaseURL: srv.URL, CarrierKey: "ck", Phase: 1, Keys: 50, MerchantOf: func(int) string { return "m1" },
		Rate: 100, Duration: 300 * time.Millisecond, Concurrency: 4, Client: srv.Client(), Ledger: l,
	})
	require.NoError(t, err)
	require.Positive(t, res.Sent)
	require.LessOrEqual(t, res.Sent, int64(100), "paced: no more than the schedule allows in 0.3 s plus the burst")
	stub.mu.Lock()
	defer stub.mu.Unlock()
	require.Empty(t, stub.problems)
}
