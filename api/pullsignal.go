package api

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// pullSignal wakes the pulls waiting for events (GET .../events?wait=):
// every callback stored by this process (the batcher's OnStored) and every
// announcement heard from the others (a LISTEN session, opened when the
// first pull waits) closes the channel the waiting pulls hold, and each
// looks again. Announcements name logical queues, not endpoints, so a
// wake-up is a hint: a pull that finds nothing waits again.
type pullSignal struct {
	db     *db.DB
	logger *slog.Logger

	mu sync.Mutex    // guards ch
	ch chan struct{} // closed by the next wake; nil while nobody holds it

	run       context.Context // the server's Run context; nil before Run
	runMu     sync.Mutex      // guards run and started
	started   bool
	wg        sync.WaitGroup // the LISTEN goroutine
	listening atomic.Bool
}

// C returns a channel closed at the next wake-up.
func (p *pullSignal) C() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		p.ch = make(chan struct{})
	}
	return p.ch
}

// wake wakes the pulls waiting now.
func (p *pullSignal) wake() {
	p.mu.Lock()
	if p.ch != nil {
		close(p.ch)
		p.ch = nil
	}
	p.mu.Unlock()
}

// setRun gives the signal the server's Run context, which ends its LISTEN
// session.
func (p *pullSignal) setRun(ctx context.Context) {
	p.runMu.Lock()
	p.run = ctx
	p.runMu.Unlock()
}

// stopping returns a channel closed when the server's Run ends (nil, which
// never is, before Run).
func (p *pullSignal) stopping() <-chan struct{} {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if p.run == nil {
		return nil
	}
	return p.run.Done()
}

// listen starts the LISTEN session if it is not running, and reports
// whether it is listening now (a waiting pull that is not heard about
// other processes' callbacks looks again every pullRecheck).
func (p *pullSignal) listen() bool {
	p.runMu.Lock()
	if !p.started && p.run != nil && p.run.Err() == nil {
		p.started = true
		p.wg.Add(1)
		go func(ctx context.Context) {
			defer p.wg.Done()
			p.listenLoop(ctx)
		}(p.run)
	}
	p.runMu.Unlock()
	return p.listening.Load()
}

// listenLoop keeps a LISTEN session and wakes the waiting pulls at every
// announcement until ctx ends; a lost session is opened again (doubling
// pauses up to 30 s), and the pulls are woken then too, for the
// announcements missed meanwhile.
func (p *pullSignal) listenLoop(ctx context.Context) {
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		l, err := p.db.ListenDue(ctx, "hookrelay-pull-listen")
		if err == nil {
			pause = 100 * time.Millisecond
			p.listening.Store(true)
			p.wake()
			for {
				ann, err := l.Wait(ctx)
				if err != nil {
					break
				}
				if ann.ConfigVersion == 0 {
					p.wake()
				}
			}
			p.listening.Store(false)
			l.Close()
			p.wake()
		}
		if ctx.Err() != nil {
			return
		}
		p.logger.Warn("pull: LISTEN session lost; waiting pulls look again every second until it is back", "error", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, 30*time.Second)
	}
}
