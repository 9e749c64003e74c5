//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookrelay/hookrelay/bench/load"
)

// loadConfig shapes the carrier traffic of a scenario.
type loadConfig struct {
	// Targets are the base URLs of the api processes; requests go round-robin.
	Targets []string
	// APIKey is the carrier key.
	APIKey string
	// Phase is written into every payload (the sink routes by it).
	Phase int
	// Keys is the number of ordering keys (tracking numbers), each sent by
	// its own goroutine, one callback after the previous was acknowledged.
	Keys int
	// Interval is the pause between two callbacks of one key. Default 20 ms.
	Interval time.Duration
	// LargeEvery makes every n-th callback of a key large (over the offload
	// threshold); 0 means none.
	LargeEvery int
	// LargeBytes is the size of a large callback. Default 20 KiB.
	LargeBytes int
	// GiveUpAfter is how long a key keeps resending a refused callback once
	// the load is stopped. Default 30 s.
	GiveUpAfter time.Duration
	// SkipLargeOnRefusal makes a key move on when a large callback is
	// refused (the S3 scenario: large ones may fail, small ones must flow).
	SkipLargeOnRefusal bool
}

// response is one answer (or transport error, Status 0) seen by the load.
type response struct {
	At     time.Time
	Status int
	Large  bool
	// RetryAfter reports whether a Retry-After header came with it.
	RetryAfter bool
	// Took is how long the request took.
	Took time.Duration
}

// loader sends callbacks and records acknowledgements in a ledger.
type loader struct {
	cfg    loadConfig
	ledger *load.Ledger
	client *http.Client
	next   atomic.Uint64 // round-robin over targets

	mu        sync.Mutex
	responses []response       // guarded by mu
	samples   map[int][]string // a few bodies of each refusal status; guarded by mu

	requests atomic.Int64
	acked    atomic.Int64 // 202, or 200 duplicate of an earlier unanswered send
	gaveUp   atomic.Int64 // callbacks a key stopped resending
}

func newLoader(cfg loadConfig, ledger *load.Ledger) *loader {
	if cfg.Interval == 0 {
		cfg.Interval = 20 * time.Millisecond
	}
	if cfg.LargeBytes == 0 {
		cfg.LargeBytes = 20 << 10
	}
	if cfg.GiveUpAfter == 0 {
		cfg.GiveUpAfter = 30 * time.Second
	}
	return &loader{cfg: cfg, ledger: ledger, client: &http.Client{
		Timeout:   15 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Keys + 4, MaxIdleConns: cfg.Keys + 4},
	}}
}

// run sends until stop is closed, then lets every key finish (or give up on)
// the callback it is sending, and returns.
func (l *loader) run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for k := range l.cfg.Keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.key(k, stop)
		}()
	}
	wg.Wait()
	l.client.CloseIdleConnections()
}

func (l *loader) key(k int, stop <-chan struct{}) {
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		large := l.cfg.LargeEvery > 0 && seq%l.cfg.LargeEvery == l.cfg.LargeEvery-1
		body := l.payload(k, seq, large)
		idem := fmt.Sprintf("p%d-k%d-s%d", l.cfg.Phase, k, seq)
		sentAt := time.Now()
		var stoppedAt time.Time
		for backoff := 20 * time.Millisecond; ; backoff = min(backoff*2, 500*time.Millisecond) {
			status := l.send(body, idem, large)
			if status == http.StatusAccepted || status == http.StatusOK {
				l.ledger.Acked(k, seq, sentAt)
				l.acked.Add(1)
				break
			}
			if large && l.cfg.SkipLargeOnRefusal && status != 0 {
				// Refused for sure (not ambiguous): never stored, move on.
				break
			}
			if stoppedAt.IsZero() {
				select {
				case <-stop:
					stoppedAt = time.Now()
				default:
				}
			}
			if !stoppedAt.IsZero() && time.Since(stoppedAt) > l.cfg.GiveUpAfter {
				l.gaveUp.Add(1)
				return // the key's order would break if it went on
			}
			time.Sleep(backoff)
		}
		time.Sleep(l.cfg.Interval)
	}
}

// payload is a callback of the benchmark's shape: the sink reads phase, key
// and seq; the carrier's ordering key is tracking_no.
func (l *loader) payload(k, seq int, large bool) []byte {
	p := map[string]any{
		"tracking_no": fmt.Sprintf("T%d-%06d", l.cfg.Phase, k),
		"status":      "in_transit",
		"phase":       l.cfg.Phase,
		"key":         k,
		"seq":         seq,
	}
	if large {
		p["pad"] = strings.Repeat("x", l.cfg.LargeBytes)
	}
	b, _ := json.Marshal(p)
	return b
}

// send posts one callback and returns the status (0 on a transport error).
func (l *loader) send(body []byte, idem string, large bool) int {
	target := l.cfg.Targets[int(l.next.Add(1))%len(l.cfg.Targets)]
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, target+"/v1/callbacks", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.cfg.APIKey)
	req.Header.Set("Idempotency-Key", idem)
	l.requests.Add(1)
	start := time.Now()
	resp, err := l.client.Do(req)
	r := response{At: time.Now(), Large: large}
	r.Took = r.At.Sub(start)
	var sample string
	if err == nil {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		r.Status = resp.StatusCode
		r.RetryAfter = resp.Header.Get("Retry-After") != ""
		sample = string(data)
	} else {
		sample = err.Error()
	}
	l.mu.Lock()
	l.responses = append(l.responses, r)
	if r.Status != http.StatusAccepted && len(l.samples[r.Status]) < 3 {
		if l.samples == nil {
			l.samples = map[int][]string{}
		}
		l.samples[r.Status] = append(l.samples[r.Status], sample)
	}
	l.mu.Unlock()
	return r.Status
}

// answers returns a copy of every response seen so far.
func (l *loader) answers() []response {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]response(nil), l.responses...)
}

// refusals returns a few answer bodies (or transport errors) of each status
// other than 202.
func (l *loader) refusals() map[int][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int][]string{}
	for k, v := range l.samples {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// statusCounts counts the answers by status (0 = transport error).
func statusCounts(rs []response) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

// firstAcceptAfter returns how long after t the first 202 came (-1 if none).
func firstAcceptAfter(rs []response, t time.Time, large bool) time.Duration {
	best := time.Duration(-1)
	for _, r := range rs {
		if r.Large == large && r.Status == http.StatusAccepted && r.At.After(t) {
			if d := r.At.Sub(t); best < 0 || d < best {
				best = d
			}
		}
	}
	return best
}
