package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LoadConfig describes the carrier traffic of one phase.
type LoadConfig struct {
	// BaseURL is the service (http://host:port); callbacks go to
	// BaseURL/v1/callbacks.
	BaseURL string
	// CarrierKey authenticates the callbacks.
	CarrierKey string
	// CarrierKeyOf, when set, replaces CarrierKey: the key of the carrier
	// that sends key's callbacks (traffic spread over several carriers).
	CarrierKeyOf func(key int) string
	// Phase is written into every payload so the sink finds the ledger.
	Phase int
	// Keys is the number of tracking numbers (ordering keys). Default 10,000.
	Keys int
	// MerchantOf returns the merchant id a key's callbacks name (routing).
	MerchantOf func(key int) string
	// SmallBytes is the size of an ordinary callback. Default 1,200.
	SmallBytes int
	// LargeBytes is the size of a large callback. Default 30,000.
	LargeBytes int
	// LargeFraction is the share (0..1) of large callbacks. Default 0 (set
	// 0.05 for the benchmarks' mix).
	LargeFraction float64
	// Rate is the open-loop pace in callbacks per second; 0 sends as fast as
	// Concurrency allows (closed loop).
	Rate float64
	// RateAt, when set, replaces Rate: the open-loop pace at each moment of
	// the phase, as a function of the time since its start (a day's shape).
	RateAt func(elapsed time.Duration) float64
	// Duration bounds the phase; 0 means until MaxAcked.
	Duration time.Duration
	// MaxAcked stops the phase after that many acknowledgements; 0 = no bound.
	MaxAcked int64
	// Concurrency is the number of requests in flight at most. Default 128.
	Concurrency int
	// Client sends the requests.
	Client *http.Client
	// Ledger receives the acknowledgements.
	Ledger *Ledger
}

// LoadResult counts what the load generator did.
type LoadResult struct {
	Sent     int64         // requests completed (any outcome)
	Acked    int64         // answered 202
	Statuses map[int]int64 // other answers by status; 0 = transport error
	Start    time.Time     // first request
	End      time.Time     // last answer
	Errors   []string      // a few examples of failures
	// AckLatencies are the request times of the acknowledged callbacks.
	AckLatencies []time.Duration
	mu           sync.Mutex     // guards Statuses, Errors and AckLatencies
	keyState     []atomic.Int64 // last seq per key, advanced by the key's holder
}

// Elapsed returns the length of the load.
func (r *LoadResult) Elapsed() time.Duration { return r.End.Sub(r.Start) }

func (r *LoadResult) fail(status int, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Statuses[status]++
	if len(r.Errors) < 5 {
		r.Errors = append(r.Errors, msg)
	}
}

// RunLoad sends callbacks until the duration passes, MaxAcked is reached or
// ctx ends. A key's next callback is sent only after the previous one was
// answered. In-flight requests always complete, so every acknowledgement is
// recorded.
func RunLoad(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	if cfg.Keys <= 0 {
		cfg.Keys = 10000
	}
	if cfg.SmallBytes <= 0 {
		cfg.SmallBytes = 1200
	}
	if cfg.LargeBytes <= 0 {
		cfg.LargeBytes = 30000
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 128
	}
	if cfg.Duration <= 0 && cfg.MaxAcked <= 0 {
		return nil, fmt.Errorf("load: need a duration or a callback count")
	}
	res := &LoadResult{Statuses: map[int]int64{}, keyState: make([]atomic.Int64, cfg.Keys)}
	free := make(chan int, cfg.Keys)
	for _, k := range rand.Perm(cfg.Keys) {
		free <- k
	}
	pad := strings.Repeat("x", max(cfg.SmallBytes, cfg.LargeBytes))
	url := strings.TrimRight(cfg.BaseURL, "/") + "/v1/callbacks"

	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	var tokens chan struct{}
	var wg sync.WaitGroup
	res.Start = time.Now()
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, halt)
		defer t.Stop()
	}
	go func() {
		select {
		case <-ctx.Done():
			halt()
		case <-stop:
		}
	}()
	if cfg.Rate > 0 || cfg.RateAt != nil {
		rateAt := cfg.RateAt
		if rateAt == nil {
			rateAt = func(time.Duration) float64 { return cfg.Rate }
		}
		tokens = make(chan struct{}, cfg.Concurrency)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(tokens)
			pace(stop, tokens, rateAt, res.Start)
		}()
	}
	var last atomic.Int64
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if tokens != nil {
					if _, ok := <-tokens; !ok {
						return
					}
				}
				var k int
				select {
				case <-stop:
					return
				case k = <-free:
				}
				// A select with both ready picks either: a worker blocked
				// on a key when the phase stopped may get one. It must not
				// send it (MaxAcked would be overshot by more than the
				// requests already in flight).
				select {
				case <-stop:
					free <- k
					return
				default:
				}
				sendOne(cfg, res, url, pad, k)
				last.Store(time.Now().UnixNano())
				// Stop before the key is free again: a request of a key
				// whose worker saw MaxAcked reached is never sent, so at
				// most one request per key is in flight past it.
				if cfg.MaxAcked > 0 && res.acked() >= cfg.MaxAcked {
					halt()
				}
				free <- k
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	wg.Wait()
	halt()
	res.End = time.Unix(0, last.Load())
	if last.Load() == 0 {
		res.End = time.Now()
	}
	return res, nil
}

func (r *LoadResult) acked() int64 { return atomic.LoadInt64(&r.Acked) }

// pace emits rateAt(time since start) tokens per second from start until
// stop closes, catching up in bursts after oversleeping (open loop: the
// schedule never slips).
func pace(stop <-chan struct{}, tokens chan<- struct{}, rateAt func(time.Duration) float64, start time.Time) {
	var at time.Duration // the next token's time, since start
	for {
		due := start.Add(at)
		at += time.Duration(float64(time.Second) / max(rateAt(at), 0.1))
		if d := time.Until(due); d > time.Millisecond {
			t := time.NewTimer(d)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-stop:
			return
		case tokens <- struct{}{}:
		}
	}
}

// sendOne sends the next callback of key k and counts its answer.
func sendOne(cfg LoadConfig, res *LoadResult, url, pad string, k int) {
	seq := int(res.keyState[k].Add(1))
	size := cfg.SmallBytes
	if cfg.LargeFraction > 0 && rand.Float64() < cfg.LargeFraction {
		size = cfg.LargeBytes
	}
	body := buildPayload(cfg.Phase, k, seq, cfg.MerchantOf(k), size, pad)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		res.fail(0, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	carrierKey := cfg.CarrierKey
	if cfg.CarrierKeyOf != nil {
		carrierKey = cfg.CarrierKeyOf(k)
	}
	req.Header.Set("Authorization", "Bearer "+carrierKey)
	sentAt := time.Now()
	resp, err := cfg.Client.Do(req)
	atomic.AddInt64(&res.Sent, 1)
	if err != nil {
		res.fail(0, err.Error())
		return
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		res.fail(resp.StatusCode, fmt.Sprintf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg)))
		return
	}
	took := time.Since(sentAt)
	cfg.Ledger.Acked(k, seq, sentAt)
	atomic.AddInt64(&res.Acked, 1)
	res.mu.Lock()
	res.AckLatencies = append(res.AckLatencies, took)
	res.mu.Unlock()
}

// buildPayload returns a callback of about size bytes: the fields the sink
// reads first, the routing fields, then padding.
func buildPayload(phase, key, seq int, merchant string, size int, pad string) []byte {
	b := make([]byte, 0, size+16)
	b = append(b, `{"phase":`...)
	b = strconv.AppendInt(b, int64(phase), 10)
	b = append(b, `,"key":`...)
	b = strconv.AppendInt(b, int64(key), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"tracking_no":"TN`...)
	b = strconv.AppendInt(b, int64(phase), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(key), 10)
	b = append(b, `","merchant_id":"`...)
	b = append(b, merchant...)
	b = append(b, `","status":"in_transit","pad":"`...)
	if n := size - len(b) - 2; n > 0 {
		b = append(b, pad[:min(n, len(pad))]...)
	}
	b = append(b, `"}`...)
	return b
}
