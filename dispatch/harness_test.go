package dispatch

import (
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// received is one request a sink got.
type received struct {
	Header http.Header
	Body   []byte
	At     time.Time
	Status int
}

// sink is a loopback merchant endpoint. Its handler decides the status of
// each request (200 by default) and it records everything.
type sink struct {
	srv *httptest.Server

	mu     sync.Mutex // mu guards got and decide
	got    []received
	decide func(r *http.Request, body []byte) (status int, header http.Header)
	notify chan struct{}
}

func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{notify: make(chan struct{}, 1)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		status, hdr := http.StatusOK, http.Header(nil)
		if s.decide != nil {
			status, hdr = s.decide(r, body)
		}
		s.got = append(s.got, received{Header: r.Header.Clone(), Body: body, At: time.Now(), Status: status})
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("ok " + strconv.Itoa(status)))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) setDecide(f func(r *http.Request, body []byte) (int, http.Header)) {
	s.mu.Lock()
	s.decide = f
	s.mu.Unlock()
}

func (s *sink) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

// testConfig is a dispatcher configuration for fast tests.
func testConfig() Config {
	return Config{
		Queues: 8, Lease: 2 * time.Second, AllowPrivateTargets: true,
		IdlePoll: 20 * time.Millisecond, DrainTimeout: 2 * time.Second,
		RetryJitter: -1, HoldDelay: 200 * time.Millisecond, StoreRetryDelay: 100 * time.Millisecond,
		EndpointCacheTTL: 50 * time.Millisecond,
		// None: these tests count attempts against retry_schedule (1 + n);
		// quick_retry_test.go tests the quick steps.
		QuickRetries: []time.Duration{},
	}
}

// testLogger logs warnings and errors into the test's output.
func testLogger(t testing.TB) *slog.Logger { return testenv.Logger(t, slog.LevelWarn) }

// runDispatcher starts a dispatcher and returns it with a stop function
// (also called at cleanup) that returns Run's error.
func runDispatcher(t *testing.T, store *db.DB, cfg Config) (*Dispatcher, func() error) {
	t.Helper()
	d := New(testLogger(t), cfg, store, nil, nil)
	return d, startDispatcher(t, d)
}

// startDispatcher runs d (its test signals set, if any) as runDispatcher
// does.
func startDispatcher(t *testing.T, d *Dispatcher) (stop func() error) {
	t.Helper()
	stop = testenv.Go(t, "the dispatcher", d.Run)
	testenv.Eventually(t, 10*time.Second, "dispatcher registration", func() bool { return d.ID() != 0 })
	return stop
}

// claimWatch records the claims of a dispatcher's claim loops (its
// test.claimed signal), to tell when each is paused: a loop whose claim over
// every queue it holds found nothing waits, until a wake-up or the end of
// its pause (IdlePoll), before it claims again.
type claimWatch struct {
	d     *Dispatcher
	mu    sync.Mutex // mu guards loops
	loops map[int]loopClaims
}

// loopClaims is what a claim loop's claims so far were.
type loopClaims struct {
	n     int // claims
	over  int // queues the last one covered
	found int // rows the last one leased
}

// watchClaims starts recording d's claims; call it before Run.
func watchClaims(d *Dispatcher) *claimWatch {
	w := &claimWatch{d: d, loops: map[int]loopClaims{}}
	d.test.claimed = func(part int, queues []int, rows int) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.loops[part] = loopClaims{n: w.loops[part].n + 1, over: len(queues), found: rows}
	}
	return w
}

// snapshot returns each loop's claims so far.
func (w *claimWatch) snapshot() map[int]loopClaims {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.loops)
}

// paused reports whether loop part's last claim was over every queue it
// holds and found nothing; w.mu must be held.
func (w *claimWatch) paused(part int) bool {
	l := w.loops[part]
	return l.n > 0 && l.found == 0 && l.over == len(w.d.heldQueues(part, w.d.cfg.ClaimLoops))
}

// waitPaused waits until every claim loop is paused with no wake-up
// waiting for it. Given since (a snapshot), it waits only for the loops
// that were paused then, and for each of them to have claimed again since
// (a wake-up after the snapshot was taken, and its claim found nothing);
// the others were waiting out a busy pause, which takes no wake-up.
func (w *claimWatch) waitPaused(t *testing.T, since map[int]loopClaims) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "every claim loop paused", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for part := range w.d.cfg.ClaimLoops {
			if since != nil {
				was, ok := since[part]
				if !ok || was.found != 0 {
					continue
				}
				if w.loops[part].n <= was.n {
					return false
				}
			}
			if !w.paused(part) || len(w.d.due[part]) > 0 {
				return false
			}
		}
		return true
	})
}

// httpTestServer is an httptest.Server closed at cleanup.
type httpTestServer = httptest.Server

func newHTTPTestServer(t testing.TB, h http.Handler) *httpTestServer {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}
