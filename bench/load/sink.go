package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SinkConfig tunes the loopback merchant sink.
type SinkConfig struct {
	// Latency is how long the sink waits before answering each delivery.
	// Default 0.
	Latency time.Duration
	// FailureRate is the fraction (0..1) of deliveries answered 500 to make
	// the service retry. Default 0.
	FailureRate float64
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Sink is the merchant side of the benchmark: an HTTP server on loopback
// whose path /e/<n> is endpoint n. It verifies webhook-signature with the
// endpoint's secret and records every arrival in the ledger of the phase
// named inside the payload.
type Sink struct {
	cfg SinkConfig
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup

	mu      sync.RWMutex
	keys    map[int][]byte        // endpoint → HMAC key; guarded by mu
	ledgers map[int]*Ledger       // phase → ledger; guarded by mu
	slow    map[int]time.Duration // endpoint → answer delay beside Latency; guarded by mu

	// firstFailure is the share of first attempts answered 500, as
	// math.Float64bits (SetFirstAttemptFailureRate).
	firstFailure atomic.Uint64

	badSignature atomic.Int64
	badPayload   atomic.Int64
	received     atomic.Int64
	bufs         sync.Pool
}

// SinkStats are counters of requests the ledger could not take.
type SinkStats struct {
	Received     int64 // every request
	BadSignature int64 // missing or wrong webhook-signature (answered 401)
	BadPayload   int64 // unknown endpoint, phase or payload shape (answered 400)
}

// StartSink listens on 127.0.0.1 on a free port and serves until Close.
func StartSink(cfg SinkConfig) (*Sink, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sink listen: %w", err)
	}
	s := &Sink{cfg: cfg, ln: ln, keys: map[int][]byte{}, ledgers: map[int]*Ledger{}}
	s.bufs.New = func() any { return new(bytes.Buffer) }
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL returns the base URL of the sink ("http://127.0.0.1:port").
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() }

// EndpointURL returns the URL to register for endpoint n.
func (s *Sink) EndpointURL(n int) string { return s.URL() + "/e/" + strconv.Itoa(n) }

// SetSecret installs the signing secret ("whsec_...") of endpoint n.
func (s *Sink) SetSecret(n int, secret string) error {
	key, err := secretKey(secret)
	if err != nil {
		return fmt.Errorf("endpoint %d: %w", n, err)
	}
	s.mu.Lock()
	s.keys[n] = key
	s.mu.Unlock()
	return nil
}

// SetLatency has endpoint n answer after d (or the sink's Latency when
// longer): a slow merchant beside fast ones.
func (s *Sink) SetLatency(n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slow == nil {
		s.slow = map[int]time.Duration{}
	}
	s.slow[n] = d
}

// SetLedger routes the arrivals of phase to l.
func (s *Sink) SetLedger(phase int, l *Ledger) {
	s.mu.Lock()
	s.ledgers[phase] = l
	s.mu.Unlock()
}

// SetFirstAttemptFailureRate makes the sink answer 500 to that share (0..1)
// of first attempts (X-Hookrelay-Attempt: 1), on top of FailureRate; retries
// are answered as usual. It models transient failures: the flaky phase.
func (s *Sink) SetFirstAttemptFailureRate(rate float64) {
	s.firstFailure.Store(math.Float64bits(rate))
}

// Stats returns the sink's counters.
func (s *Sink) Stats() SinkStats {
	return SinkStats{Received: s.received.Load(), BadSignature: s.badSignature.Load(), BadPayload: s.badPayload.Load()}
}

// Close stops the server and waits for its goroutine.
func (s *Sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	s.wg.Wait()
	return err
}

// sinkPayload is the part of a benchmark callback the sink reads.
type sinkPayload struct {
	Phase int `json:"phase"`
	Key   int `json:"key"`
	Seq   int `json:"seq"`
}

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := s.cfg.Now()
	s.received.Add(1)
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/e/"))
	if r.Method != http.MethodPost || err != nil {
		s.badPayload.Add(1)
		http.Error(w, "unknown endpoint", http.StatusNotFound)
		return
	}
	buf := s.bufs.Get().(*bytes.Buffer)
	defer s.bufs.Put(buf)
	buf.Reset()
	if _, err := io.Copy(buf, r.Body); err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	body := buf.Bytes()

	s.mu.RLock()
	key := s.keys[n]
	s.mu.RUnlock()
	h := r.Header
	if key == nil || !verifySignature(key, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), body) {
		s.badSignature.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var p sinkPayload
	if err := json.Unmarshal(body, &p); err != nil {
		s.badPayload.Add(1)
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	s.mu.RLock()
	l := s.ledgers[p.Phase]
	latency := max(s.cfg.Latency, s.slow[n])
	s.mu.RUnlock()
	if l == nil {
		s.badPayload.Add(1)
		http.Error(w, "unknown phase", http.StatusBadRequest)
		return
	}
	ok := s.cfg.FailureRate <= 0 || rand.Float64() >= s.cfg.FailureRate
	if ff := math.Float64frombits(s.firstFailure.Load()); ok && ff > 0 && h.Get("X-Hookrelay-Attempt") == "1" {
		ok = rand.Float64() >= ff
	}
	l.Arrived(n, p.Key, p.Seq, at, ok)
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	if !ok {
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
