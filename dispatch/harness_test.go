package dispatch

import (
	"io"
	"log/slog"
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
	stop := testenv.Go(t, "the dispatcher", d.Run)
	testenv.Eventually(t, 10*time.Second, "dispatcher registration", func() bool { return d.ID() != 0 })
	return d, stop
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
