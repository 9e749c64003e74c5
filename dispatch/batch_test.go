package dispatch

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// wireEvent is one event of a batch body as a receiver reads it.
type wireEvent struct {
	ID          string          `json:"id"`
	DeliveryID  string          `json:"delivery_id"`
	EventType   string          `json:"event_type"`
	Carrier     string          `json:"carrier"`
	OrderingKey string          `json:"ordering_key"`
	Timestamp   time.Time       `json:"timestamp"`
	Attempt     int             `json:"attempt"`
	Body        json.RawMessage `json:"body"`
}

func batchOf(t *testing.T, r received) []wireEvent {
	t.Helper()
	var evs []wireEvent
	require.NoError(t, json.Unmarshal(r.Body, &evs), "the body is a JSON array of events: %s", r.Body)
	require.Equal(t, strconv.Itoa(len(evs)), r.Header.Get("X-Hookrelay-Batch-Size"))
	return evs
}

// verifyHMAC checks a webhook-signature as a receiver does: HMAC-SHA256
// with the secret's key over "<webhook-id>.<webhook-timestamp>.<body>",
// the body being the exact bytes received.
func verifyHMAC(t *testing.T, secret string, h http.Header, body []byte) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.", h.Get("Webhook-Id"), h.Get("Webhook-Timestamp"))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	require.Contains(t, strings.Fields(h.Get("Webhook-Signature")), want, "the signature covers the whole array")
}

// batchedEndpoint is an endpoint of a new merchant sending to s in batches.
func batchedEndpoint(t *testing.T, store *db.DB, s *sink, b db.EndpointBatch, sched ...time.Duration) (db.Endpoint, string) {
	t.Helper()
	return dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, Batch: b, RetrySchedule: sched})
}

// totalEvents counts the events of every batch s got.
func totalEvents(t *testing.T, s *sink) int {
	n := 0
	for _, r := range s.requests() {
		n += len(batchOf(t, r))
	}
	return n
}

func queueEmpty(t *testing.T, store *db.DB) bool {
	counts, err := dbtest.DeliveryQueueCounts(context.Background(), store)
	require.NoError(t, err)
	for _, c := range counts {
		if c.Due+c.Waiting+c.Parked > 0 {
			return false
		}
	}
	return true
}

// TestBatchBodyAndSignature: five callbacks of five keys queued before the
// dispatcher starts go as one POST of a JSON array, in the order they were
// stored, each event with its id, type, carrier, key, time, attempt and the
// callback's bytes; the signature verifies over the exact body.
func TestBatchBodyAndSignature(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	ep, secret := batchedEndpoint(t, store, s, db.EndpointBatch{MaxEvents: 5, MaxWait: 5 * time.Second})
	var msgs []db.StoredMessage
	for i := range 5 {
		msgs = append(msgs, dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8,
			OrderingKey: "K" + strconv.Itoa(i), EventType: "delivered",
			Payload: []byte(`{"n": ` + strconv.Itoa(i) + `}`)}))
	}
	runDispatcher(t, store, testConfig())

	testenv.Eventually(t, 10*time.Second, "the batch", func() bool { return len(s.requests()) > 0 })
	testenv.Eventually(t, 10*time.Second, "acknowledged", func() bool { return queueEmpty(t, store) })
	reqs := s.requests()
	require.Len(t, reqs, 1, "max_events reached: one request, before max_wait")
	r := reqs[0]
	evs := batchOf(t, r)
	require.Len(t, evs, 5)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, "batch_"+strconv.FormatInt(msgs[0].DeliveryIDs[0], 10)+"_5", r.Header.Get("Webhook-Id"))
	require.Equal(t, r.Header.Get("Webhook-Id"), r.Header.Get("Idempotency-Key"))
	verifyHMAC(t, secret, r.Header, r.Body)
	for i, e := range evs {
		m := msgs[i]
		require.Equal(t, "msg_"+strconv.FormatInt(m.ID, 10), e.ID)
		require.Equal(t, strconv.FormatInt(m.DeliveryIDs[0], 10), e.DeliveryID)
		require.Equal(t, "delivered", e.EventType)
		require.NotEmpty(t, e.Carrier)
		require.Equal(t, "K"+strconv.Itoa(i), e.OrderingKey)
		require.Equal(t, 1, e.Attempt)
		require.WithinDuration(t, m.ReceivedAt, e.Timestamp, time.Millisecond)
		require.Equal(t, `{"n": `+strconv.Itoa(i)+`}`, string(e.Body), "the callback's bytes as stored")
	}
}

// TestBatchKeyOrderAcrossBatches: three keys of five callbacks each; a
// batch holds at most one event of a key (the next is not claimable before
// the one before is acknowledged), and each key's events arrive in order,
// batch after batch.
func TestBatchKeyOrderAcrossBatches(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	ep, _ := batchedEndpoint(t, store, s, db.EndpointBatch{MaxEvents: 10, MaxWait: 20 * time.Millisecond})
	const keys, per = 3, 5
	for i := range per {
		for k := range keys {
			dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8,
				OrderingKey: "K" + strconv.Itoa(k), Payload: []byte(`{"i":` + strconv.Itoa(i) + `}`)})
		}
	}
	runDispatcher(t, store, testConfig())

	testenv.Eventually(t, 10*time.Second, "every event", func() bool { return totalEvents(t, s) == keys*per })
	next := map[string]int{}
	for _, r := range s.requests() {
		seen := map[string]bool{}
		for _, e := range batchOf(t, r) {
			require.False(t, seen[e.OrderingKey], "one event of a key per batch")
			seen[e.OrderingKey] = true
			require.Equal(t, `{"i":`+strconv.Itoa(next[e.OrderingKey])+`}`, string(e.Body), "key %s in order", e.OrderingKey)
			next[e.OrderingKey]++
		}
	}
	require.GreaterOrEqual(t, len(s.requests()), per, "a key's events in as many batches")
}

// TestBatchRetriedWhole: the first request is answered 500; the same events
// come again in the same order under the same webhook-id, each with its
// second attempt, and once accepted nothing is left or sent again.
func TestBatchRetriedWhole(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	calls := 0
	s.setDecide(func(*http.Request, []byte) (int, http.Header) {
		calls++
		if calls == 1 {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	ep, secret := batchedEndpoint(t, store, s, db.EndpointBatch{MaxEvents: 4, MaxWait: 5 * time.Second}, 200*time.Millisecond)
	for i := range 4 {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8, OrderingKey: "K" + strconv.Itoa(i)})
	}
	runDispatcher(t, store, testConfig())

	testenv.Eventually(t, 10*time.Second, "the retry", func() bool { return len(s.requests()) >= 2 })
	testenv.Eventually(t, 10*time.Second, "acknowledged", func() bool { return queueEmpty(t, store) })
	reqs := s.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, http.StatusInternalServerError, reqs[0].Status)
	require.Equal(t, http.StatusOK, reqs[1].Status)
	first, again := batchOf(t, reqs[0]), batchOf(t, reqs[1])
	require.Len(t, again, len(first))
	for i := range first {
		require.Equal(t, first[i].ID, again[i].ID, "the same events in the same order")
		require.Equal(t, string(first[i].Body), string(again[i].Body))
		require.Equal(t, 1, first[i].Attempt)
		require.Equal(t, 2, again[i].Attempt, "every event spent the attempt")
	}
	require.Equal(t, reqs[0].Header.Get("Webhook-Id"), reqs[1].Header.Get("Webhook-Id"))
	verifyHMAC(t, secret, reqs[1].Header, reqs[1].Body)
	require.GreaterOrEqual(t, reqs[1].At.Sub(reqs[0].At), 150*time.Millisecond, "after the schedule's delay")
}

// TestBatchMaxEvents: seven callbacks of seven keys with max_events 3: no
// request carries more than three events, and every event goes once.
func TestBatchMaxEvents(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	ep, _ := batchedEndpoint(t, store, s, db.EndpointBatch{MaxEvents: 3, MaxWait: 50 * time.Millisecond})
	want := map[string]bool{}
	for i := range 7 {
		m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8, OrderingKey: "K" + strconv.Itoa(i)})
		want["msg_"+strconv.FormatInt(m.ID, 10)] = true
	}
	runDispatcher(t, store, testConfig())

	testenv.Eventually(t, 10*time.Second, "every event", func() bool { return totalEvents(t, s) >= 7 })
	testenv.Eventually(t, 10*time.Second, "acknowledged", func() bool { return queueEmpty(t, store) })
	got := map[string]bool{}
	reqs := s.requests()
	require.GreaterOrEqual(t, len(reqs), 3)
	for _, r := range reqs {
		evs := batchOf(t, r)
		require.LessOrEqual(t, len(evs), 3)
		for _, e := range evs {
			require.False(t, got[e.ID], "%s sent once", e.ID)
			got[e.ID] = true
		}
	}
	require.Equal(t, want, got)
}

// TestBatchMaxWait: a lone event of an endpoint with max_events 10 goes in
// a batch of one once max_wait is over, not before.
func TestBatchMaxWait(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	ep, _ := batchedEndpoint(t, store, s, db.EndpointBatch{MaxEvents: 10, MaxWait: 300 * time.Millisecond})
	m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8})
	start := time.Now()
	runDispatcher(t, store, testConfig())

	testenv.Eventually(t, 10*time.Second, "the batch", func() bool { return len(s.requests()) > 0 })
	r := s.requests()[0]
	require.GreaterOrEqual(t, r.At.Sub(start), 300*time.Millisecond, "it waited max_wait for more")
	evs := batchOf(t, r)
	require.Len(t, evs, 1)
	require.Equal(t, "msg_"+strconv.FormatInt(m.ID, 10), evs[0].ID)
	require.Equal(t, "batch_"+strconv.FormatInt(m.DeliveryIDs[0], 10)+"_1", r.Header.Get("Webhook-Id"))
}

// BenchmarkBatchedPush drains a backlog of 1.2 KB deliveries (2,000 keys,
// 32 queues) to one loopback endpoint, single push against batches of 100,
// and reports events/s and the dispatcher process's CPU per event (the sink
// runs in the same process and is included; PostgreSQL is not).
//
// Run: go test ./dispatch -run '^$' -bench BatchedPush -benchtime 20000x
func BenchmarkBatchedPush(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch db.EndpointBatch
	}{
		{"single", db.EndpointBatch{}},
		{"batch100", db.EndpointBatch{MaxEvents: 100, MaxWait: 50 * time.Millisecond}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchPush(b, bc.batch) })
	}
}

func benchPush(b *testing.B, batch db.EndpointBatch) {
	store := dbtest.New(b)
	ctx := context.Background()
	var got atomic.Int64
	all := make(chan struct{}) // closed when the sink has every event
	var allOnce sync.Once
	sink := newHTTPTestServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := int64(1)
		if v := r.Header.Get("X-Hookrelay-Batch-Size"); v != "" {
			n, _ = strconv.ParseInt(v, 10, 64)
		}
		if got.Add(n) >= int64(b.N) {
			allOnce.Do(func() { close(all) })
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	ep, _ := dbtest.Endpoint(b, store, &dbtest.EndpointOpts{URL: sink.URL, MaxInFlight: 1000, Batch: batch})
	carrier, _ := dbtest.Carrier(b, store, nil)
	body := []byte(`{"tracking_no":"` + strings.Repeat("a", 1170) + `"}`)
	sum := sha256.Sum256(body)
	n := b.N
	for start := 0; start < n; start += 500 {
		var msgs []db.NewMessage
		for i := start; i < min(n, start+500); i++ {
			key := fmt.Sprintf("bench-%d", i%2000)
			msgs = append(msgs, db.NewMessage{
				CarrierID: carrier.ID, EventType: "moving", OrderingKey: key, Queue: hookrelay.QueueFor(key, 32),
				Payload: body, PayloadSize: len(body), PayloadSHA256: sum[:], EndpointIDs: []int64{ep.ID},
			})
		}
		if _, err := store.MessageInsertMany(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	cfg := testConfig()
	cfg.Queues, cfg.Lease = 32, 30*time.Second
	b.ResetTimer()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	d := New(testLogger(b), cfg, store, nil, nil)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%d of %d events delivered in 10 minutes", got.Load(), n)
	}
	elapsed := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cancel()
	<-done
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/event")
}
