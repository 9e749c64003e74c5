package dispatch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestKill9LosesNothing kills a real dispatcher child process while
// deliveries are in flight: every message is still delivered, the killed
// process's rows come back after the lease, and the only duplicates are the
// requests that were in flight.
func TestKill9LosesNothing(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	g := newGatedSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: g.srv.URL, MaxInFlight: 5})
	const n = 30
	for i := range n {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprintf("kill-%d", i), Queues: 8})
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+url)
	cmd.Stderr = t.Output()
	require.NoError(t, cmd.Start())
	testenv.Eventually(t, 20*time.Second, "child deliveries in flight", func() bool { return g.count() >= 5 })
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()
	killedAt := time.Now()
	inFlight := g.count()
	require.LessOrEqual(t, inFlight, 5)
	g.open()

	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 30*time.Second, "every message delivered", func() bool { return len(g.delivered()) == n })
	ids := g.delivered()
	require.Len(t, ids, n, "nothing lost")
	dups := g.count() - n
	require.LessOrEqual(t, dups, inFlight, "duplicates at most what was in flight")
	require.GreaterOrEqual(t, time.Since(killedAt), time.Second, "rows came back only after the lease")
}

// gatedSink blocks every request (or, with onlyUA, those of that
// User-Agent) until open is called, then answers 200.
type gatedSink struct {
	srv    *httpTestServer
	gate   chan struct{}
	onlyUA string
	mu     sync.Mutex
	ids    map[string]int
	n      int
}

func newGatedSink(t *testing.T) *gatedSink { return newGatedSinkFor(t, "") }

func newGatedSinkFor(t *testing.T, onlyUA string) *gatedSink {
	g := &gatedSink{gate: make(chan struct{}), ids: map[string]int{}, onlyUA: onlyUA}
	g.srv = newHTTPTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so a client hang-up cancels r.Context()
		g.mu.Lock()
		g.n++
		g.mu.Unlock()
		if g.onlyUA == "" || r.Header.Get("User-Agent") == g.onlyUA {
			select {
			case <-g.gate:
			case <-r.Context().Done():
				return
			}
		}
		g.mu.Lock()
		g.ids[r.Header.Get("Webhook-Id")]++
		g.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	return g
}

func (g *gatedSink) open() { close(g.gate) }

func (g *gatedSink) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

func (g *gatedSink) delivered() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.ids))
	for k, v := range g.ids {
		out[k] = v
	}
	return out
}

// TestPausedDispatcherCannotAcknowledgeTwice stops (SIGSTOP) a dispatcher
// child with deliveries in flight until its leases run out; another
// dispatcher re-claims and delivers them; when the child resumes, its late
// results are fenced off by the lease token: nothing is recorded twice.
func TestPausedDispatcherCannotAcknowledgeTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	g := newGatedSinkFor(t, childUserAgent)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: g.srv.URL, MaxInFlight: 3})
	const n = 6
	var deliveryIDs []int64
	for i := range n {
		m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprintf("pause-%d", i), Queues: 8})
		deliveryIDs = append(deliveryIDs, m.DeliveryIDs[0])
	}
	logs := &lockedBuffer{}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+url)
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	testenv.Eventually(t, 20*time.Second, "child deliveries in flight", func() bool { return g.count() >= 3 })
	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))

	// After the child's 2 s lease another dispatcher delivers everything.
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 30*time.Second, "delivered by the other dispatcher", func() bool { return len(g.delivered()) == n })
	testenv.Eventually(t, 10*time.Second, "acknowledged", func() bool {
		c, err := dbtest.DeliveryQueueCounts(ctx, store)
		require.NoError(t, err)
		return len(c) == 0
	})

	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	g.open()
	testenv.Eventually(t, 20*time.Second, "the child's stale results ignored", func() bool {
		return strings.Contains(logs.String(), "stale delivery results ignored")
	})
	for _, id := range deliveryIDs {
		atts, err := dbtest.AttemptsForDelivery(ctx, store, id)
		require.NoError(t, err)
		require.Len(t, atts, 1, "delivery %d: only the live lease's result is recorded", id)
	}
	dead, err := dbtest.DeadLetterCountForEndpoint(ctx, store, ep.ID)
	require.NoError(t, err)
	require.Zero(t, dead)
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestQueuesRebalanceAndTakeover: a dispatcher that stops answering loses
// its queues to the live one within the lease; a joining dispatcher gets
// its share; a leaving one hands its queues back.
func TestQueuesRebalanceAndTakeover(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	cfg := testConfig()
	cfg.Lease = time.Second
	require.NoError(t, store.QueueLeasesEnsure(ctx, cfg.Queues))

	// A "dead" dispatcher holds every queue with an hour-long lease and
	// never heartbeats again.
	zombie, err := store.DispatcherRegister(ctx, "zombie", 1)
	require.NoError(t, err)
	got, err := store.QueueLeasesAcquire(ctx, db.QueueLeaseParams{Owner: zombie, Queues: cfg.Queues, N: cfg.Queues, Lease: time.Hour, LiveWithin: time.Hour})
	require.NoError(t, err)
	require.Len(t, got, cfg.Queues)

	held := func(id int64) int {
		ls, err := dbtest.QueueLeasesList(ctx, store)
		require.NoError(t, err)
		n := 0
		for _, l := range ls {
			if l.Owner == id {
				n++
			}
		}
		return n
	}
	d1, _ := runDispatcher(t, store, cfg)
	testenv.Eventually(t, 10*time.Second, "takeover of the dead dispatcher's queues", func() bool { return held(d1.ID()) == cfg.Queues })

	d2, stop2 := runDispatcher(t, store, cfg)
	testenv.Eventually(t, 10*time.Second, "rebalance on join", func() bool {
		return held(d1.ID()) == cfg.Queues/2 && held(d2.ID()) == cfg.Queues/2
	})
	require.NoError(t, stop2())
	testenv.Eventually(t, 10*time.Second, "queues back after leave", func() bool { return held(d1.ID()) == cfg.Queues })
}

// TestSSRFRefusedAtConnectTime: the endpoint's name resolved to a public
// address when it was registered; by delivery time DNS answers a loopback
// address, and the connection is refused by the dialer.
func TestSSRFRefusedAtConnectTime(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	s := newSink(t)
	port := s.srv.URL[strings.LastIndex(s.srv.URL, ":")+1:]
	var answer atomic.Value
	answer.Store(netip.MustParseAddr("93.184.216.34")) // public at registration
	cfg := testConfig()
	cfg.AllowPrivateTargets = false
	cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{answer.Load().(netip.Addr)}, nil
	}
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: "http://hooks.merchant.test:" + port + "/in", RetrySchedule: []time.Duration{time.Hour}})
	literal, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL})
	answer.Store(netip.MustParseAddr("127.0.0.1")) // DNS rebinding

	d := New(testLogger(t), cfg, store, nil, nil)
	t.Cleanup(d.Close)
	for _, id := range []int64{ep.ID, literal.ID} {
		res, err := d.Ping(ctx, id)
		require.NoError(t, err)
		require.Equal(t, OutcomeRefused, res.Outcome, res.Error)
	}

	m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8})
	d2 := New(testLogger(t), cfg, store, nil, nil)
	testenv.Go(t, "the dispatcher", d2.Run)
	testenv.Eventually(t, 20*time.Second, "refused attempt recorded", func() bool {
		atts, err := dbtest.AttemptsForDelivery(ctx, store, m.DeliveryIDs[0])
		require.NoError(t, err)
		return len(atts) == 1 && atts[0].Outcome == OutcomeRefused
	})
	require.Empty(t, s.requests(), "nothing reached the private address")

	// With private targets allowed the same ping goes through, signed.
	cfg.AllowPrivateTargets = true
	d3 := New(testLogger(t), cfg, store, nil, nil)
	t.Cleanup(d3.Close)
	res, err := d3.Ping(ctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, OutcomeSuccess, res.Outcome)
	r := s.requests()
	require.Len(t, r, 1)
	require.Equal(t, "ping", r[0].Header.Get("X-Hookrelay-Event-Type"))
	require.Contains(t, string(r[0].Body), `"type":"ping"`)
	require.Equal(t, res.WebhookID, r[0].Header.Get("Webhook-Id"))
}
