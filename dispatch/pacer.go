package dispatch

import (
	"context"
	"sync"
	"time"
)

// pacer caps how many rows the claim loops of one process take per second
// (Config.MaxRate): a token bucket that holds at most one batch. A claim
// takes tokens for the rows it may lease before it runs and gives back what
// it did not lease, so a process below the cap never waits, and one above
// it (a backlog) claims full batches at the capped rate instead of small
// ones as fast as deliveries free their slots.
type pacer struct {
	rate  float64 // tokens per second
	burst float64
	now   func() time.Time

	mu     sync.Mutex
	tokens float64   // guarded by mu
	last   time.Time // guarded by mu: when tokens was last brought up to date
}

// newPacer returns a full bucket of burst tokens filling at rate per second.
func newPacer(rate float64, burst int, now func() time.Time) *pacer {
	return &pacer{rate: rate, burst: float64(burst), now: now, tokens: float64(burst), last: now()}
}

// take waits until n tokens (at most the burst) are in the bucket and takes
// them. It reports false, having taken nothing, when ctx ends first.
func (p *pacer) take(ctx context.Context, n int) bool {
	want := min(float64(n), p.burst)
	for {
		p.mu.Lock()
		p.refill()
		if p.tokens >= want {
			p.tokens -= want
			p.mu.Unlock()
			return true
		}
		wait := time.Duration((want - p.tokens) / p.rate * float64(time.Second))
		p.mu.Unlock()
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// giveBack returns n unused tokens (a claim that leased fewer rows than it
// took tokens for).
func (p *pacer) giveBack(n int) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	p.refill()
	p.tokens = min(p.burst, p.tokens+float64(n))
	p.mu.Unlock()
}

// refill adds the tokens earned since last; p.mu is held.
func (p *pacer) refill() {
	now := p.now()
	if el := now.Sub(p.last); el > 0 {
		p.tokens = min(p.burst, p.tokens+el.Seconds()*p.rate)
	}
	p.last = now
}
