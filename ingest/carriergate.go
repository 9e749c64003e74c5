package ingest

import (
	"context"
	"sync"
	"time"
)

// DefaultCarrierWait is how long a carrier's callback waits for one of its
// carrier's slots (CarrierGate) before it is refused.
const DefaultCarrierWait = time.Second

// CarrierGate bounds how many callbacks of one carrier are read and
// checked at once in this process: a carrier sending from many connections
// at once has at most max of them running, the others wait, parked,
// instead of competing for the CPU with the other carriers' callbacks.
// A callback holds its slot from after its key is known until it is handed
// to the group commit (or refused): waiting for the commit takes no slot,
// so a carrier's rate is bounded by the CPU time of its callbacks, not by
// the commit's latency.
type CarrierGate struct {
	max  int
	wait time.Duration

	mu sync.Mutex // guards m
	m  map[int64]chan struct{}
}

// NewCarrierGate returns a gate of max slots per carrier (0: no bound)
// where a callback waits up to wait for one.
func NewCarrierGate(max int, wait time.Duration) *CarrierGate {
	return &CarrierGate{max: max, wait: wait, m: map[int64]chan struct{}{}}
}

// Enter takes one of carrierID's slots, waiting up to the gate's wait (or
// until ctx ends) for one. It returns the function that gives the slot back
// (calling it again does nothing), or ok false when no slot freed in time.
func (g *CarrierGate) Enter(ctx context.Context, carrierID int64) (release func(), ok bool) {
	if g == nil || g.max <= 0 {
		return func() {}, true
	}
	g.mu.Lock()
	slots := g.m[carrierID]
	if slots == nil {
		slots = make(chan struct{}, g.max)
		g.m[carrierID] = slots
	}
	g.mu.Unlock()
	select {
	case slots <- struct{}{}:
	default:
		t := time.NewTimer(g.wait)
		defer t.Stop()
		select {
		case slots <- struct{}{}:
		case <-t.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
	done := false
	return func() {
		if !done {
			done = true
			<-slots
		}
	}, true
}
