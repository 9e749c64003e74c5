// Package load is the machinery of the load benchmark (hookrelay-bench) and
// of the fault suite: a carrier load generator, a loopback merchant sink that
// checks what arrives, CPU and metrics sampling, and the per-phase result. It
// talks to the service only through its public HTTP API and /metrics.
package load

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ledgerShards spreads the sink's concurrent writes over this many locks.
const ledgerShards = 64

// Ledger is the accounting of one phase: what the load generator had
// acknowledged (per ordering key, in order) and what the sink received (per
// endpoint and ordering key, in arrival order). Analyze turns both into lost,
// duplicate and order-violation counts and end-to-end latencies.
//
// Keys are small integers 0..keys-1; endpoints are small integers too. The
// loadgen records a key's acknowledgements from one goroutine at a time (a
// key is never in flight twice), the sink records arrivals concurrently.
type Ledger struct {
	// endpointsOf returns the endpoints a callback of key k must reach.
	endpointsOf func(key int) []int

	keys []keyLog // index: key; keys[k] is written only by the holder of key k

	shards [ledgerShards]arrivalShard

	expected atomic.Int64 // acknowledged callbacks × matching endpoints
	firstOK  atomic.Int64 // distinct (endpoint, key, seq) delivered successfully
	lastOK   atomic.Int64 // unix nanos of the latest first success
	firstAt  atomic.Int64 // unix nanos of the earliest first success
}

// keyLog is the acknowledged history of one ordering key.
type keyLog struct {
	acked []ackRecord // ascending seq
}

type ackRecord struct {
	seq    int
	sentAt time.Time
}

type arrivalShard struct {
	mu      sync.Mutex
	streams map[streamID]*stream // guarded by mu
}

type streamID struct{ endpoint, key int }

// stream is what one endpoint received for one ordering key.
type stream struct {
	arrivals []arrival
	ok       []bool // ok[seq]: seq was answered 2xx at least once
}

type arrival struct {
	seq int
	at  time.Time
	ok  bool // the sink answered 2xx
}

// NewLedger returns an empty ledger for keys ordering keys; endpointsOf gives
// the endpoints every callback of a key is routed to.
func NewLedger(keys int, endpointsOf func(key int) []int) *Ledger {
	l := &Ledger{endpointsOf: endpointsOf, keys: make([]keyLog, keys)}
	for i := range l.shards {
		l.shards[i].streams = map[streamID]*stream{}
	}
	return l
}

// Acked records that the callback seq of key was acknowledged (202). sentAt is
// when its request started. Seqs of one key must be recorded ascending.
func (l *Ledger) Acked(key, seq int, sentAt time.Time) {
	l.keys[key].acked = append(l.keys[key].acked, ackRecord{seq: seq, sentAt: sentAt})
	l.expected.Add(int64(len(l.endpointsOf(key))))
}

// Arrived records a delivery attempt received by the sink; ok reports whether
// the sink answered it with a 2xx.
func (l *Ledger) Arrived(endpoint, key, seq int, at time.Time, ok bool) {
	if key < 0 || key >= len(l.keys) || seq < 0 {
		return
	}
	sh := &l.shards[key%ledgerShards]
	sh.mu.Lock()
	id := streamID{endpoint, key}
	s := sh.streams[id]
	if s == nil {
		s = &stream{}
		sh.streams[id] = s
	}
	s.arrivals = append(s.arrivals, arrival{seq: seq, at: at, ok: ok})
	first := false
	if ok {
		for len(s.ok) <= seq {
			s.ok = append(s.ok, false)
		}
		first = !s.ok[seq]
		s.ok[seq] = true
	}
	sh.mu.Unlock()
	if first {
		l.firstOK.Add(1)
		for {
			first := l.firstAt.Load()
			if (first != 0 && first <= at.UnixNano()) || l.firstAt.CompareAndSwap(first, at.UnixNano()) {
				break
			}
		}
		for {
			last := l.lastOK.Load()
			if at.UnixNano() <= last || l.lastOK.CompareAndSwap(last, at.UnixNano()) {
				break
			}
		}
	}
}

// Progress returns the number of expected deliveries (acknowledged callbacks
// × matching endpoints) and of distinct successful arrivals so far.
func (l *Ledger) Progress() (expected, delivered int64) {
	return l.expected.Load(), l.firstOK.Load()
}

// LastDelivery returns the time of the latest first successful arrival (zero
// when none).
func (l *Ledger) LastDelivery() time.Time {
	n := l.lastOK.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// FirstDelivery returns the time of the earliest successful arrival (zero
// when none).
func (l *Ledger) FirstDelivery() time.Time {
	n := l.firstAt.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Accounting is the outcome of a phase, from the ledger.
type Accounting struct {
	Acknowledged    int             // callbacks answered 202
	Expected        int             // acknowledged × matching endpoints
	Delivered       int             // expected deliveries that arrived with a 2xx answer
	Lost            int             // expected deliveries that never arrived with a 2xx answer
	Duplicates      int             // 2xx arrivals beyond the first for one (endpoint, key, seq)
	OrderViolations int             // attempts of a seq while an earlier acknowledged seq of the same (endpoint, key) was not yet delivered
	Latencies       []time.Duration // per delivered expected delivery: first 2xx arrival − request start, unsorted
	SentAt          []time.Time     // the request start of each of Latencies, in the same order
	Unexpected      int             // 2xx arrivals of callbacks never acknowledged (send errors, stray traffic)
	LostSample      []string        // up to 20 lost deliveries, as "endpoint/key/seq"
}

// Analyze computes the accounting. Call it once the load generator stopped
// (it reads the acknowledgements without locks); the sink may still record.
func (l *Ledger) Analyze() Accounting {
	var a Accounting
	for key := range l.keys {
		acked := l.keys[key].acked
		a.Acknowledged += len(acked)
		eps := l.endpointsOf(key)
		sh := &l.shards[key%ledgerShards]
		sh.mu.Lock()
		for _, ep := range eps {
			a.Expected += len(acked)
			s := sh.streams[streamID{ep, key}]
			if s == nil {
				a.Lost += len(acked)
				for _, r := range acked {
					a.sampleLost(ep, key, r.seq)
				}
				continue
			}
			analyzeStream(&a, acked, s, ep, key)
		}
		sh.mu.Unlock()
	}
	return a
}

// analyzeStream walks one stream's arrivals in order. next is the position in
// acked of the earliest acknowledged seq not yet delivered: the first attempt
// of any acknowledged seq beyond it is an order violation.
func analyzeStream(a *Accounting, acked []ackRecord, s *stream, ep, key int) {
	// position of each acknowledged seq in acked
	pos := make(map[int]int, len(acked))
	for i, r := range acked {
		pos[r.seq] = i
	}
	delivered := make([]bool, len(acked))
	attempted := make(map[int]bool, len(acked))
	firstAt := make([]time.Time, len(acked))
	next := 0
	for _, arr := range s.arrivals {
		i, isAcked := pos[arr.seq]
		if !attempted[arr.seq] {
			attempted[arr.seq] = true
			if isAcked && i > next {
				a.OrderViolations++
			}
		}
		if !arr.ok {
			continue
		}
		if !isAcked {
			a.Unexpected++
			continue
		}
		if delivered[i] {
			a.Duplicates++
			continue
		}
		delivered[i] = true
		firstAt[i] = arr.at
		for next < len(acked) && delivered[next] {
			next++
		}
	}
	for i, d := range delivered {
		if !d {
			a.Lost++
			a.sampleLost(ep, key, acked[i].seq)
			continue
		}
		a.Delivered++
		a.Latencies = append(a.Latencies, firstAt[i].Sub(acked[i].sentAt))
		a.SentAt = append(a.SentAt, acked[i].sentAt)
	}
}

// sampleLost keeps a few lost deliveries for the report.
func (a *Accounting) sampleLost(ep, key, seq int) {
	if len(a.LostSample) < 20 {
		a.LostSample = append(a.LostSample, fmt.Sprintf("%d/%d/%d", ep, key, seq))
	}
}
