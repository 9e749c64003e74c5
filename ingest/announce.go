package ingest

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrelay/hookrelay/db"
)

// DefaultAnnounceInterval is the shortest pause between two announcements
// by default (HOOKRELAY_INGEST_NOTIFY_INTERVAL).
const DefaultAnnounceInterval = 10 * time.Millisecond

// announceBusyRate is the rate of stored deliveries, per API process, above
// which the announcer backs off: a dispatcher claiming more than a few
// hundred rows a second rarely finds a claim empty, and only a dispatcher
// that found one empty (idle, backing off) takes a wake-up.
const announceBusyRate = 500.0

// Announcer tells dispatchers in other processes that callbacks were stored
// (db.DueNotify). The first group commit after a quiet spell is announced at
// once; those during the pause after an announcement are announced together
// at its end. The pause is interval while deliveries are stored at less than
// announceBusyRate; above it the pause doubles at each announcement, up to
// 20 × interval (200 ms by default, the dispatchers' default idle poll), and
// it is back at interval once a pause sees the rate below it. So a busy API
// sends a handful of announcements a second, whatever its rate, and at low
// rates every callback is announced within interval. Each announcement names
// the logical queues that got deliveries since the last one, so only the
// claim loops holding them are woken.
type Announcer struct {
	notify   func(ctx context.Context, a db.Announcement) error
	token    string
	interval time.Duration
	logger   *slog.Logger
	kick     chan struct{} // buffered 1: an announcement is owed
	sent     prometheus.Counter

	mu         sync.Mutex       // guards queues, deliveries and since
	queues     map[int]struct{} // queues stored into since the last announcement
	deliveries int64            // deliveries stored since the rate was last read
	since      time.Time        // when the rate was last read
}

// NewAnnouncer returns an announcer that sends its announcements with
// notify (db.DB.DueNotify), naming this process by token, with pauses of at
// least interval; sent counts them. Run runs it; Stored feeds it.
func NewAnnouncer(notify func(context.Context, db.Announcement) error, token string, interval time.Duration,
	logger *slog.Logger, sent prometheus.Counter,
) *Announcer {
	return &Announcer{notify: notify, token: token, interval: interval, logger: logger, kick: make(chan struct{}, 1),
		sent: sent, queues: map[int]struct{}{}, since: time.Now()}
}

// Stored records that n deliveries were committed into queues (a
// BatcherConfig.OnStored). It never blocks for long.
func (a *Announcer) Stored(n int, queues []int) {
	a.mu.Lock()
	for _, q := range queues {
		a.queues[q] = struct{}{}
	}
	a.deliveries += int64(n)
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Run sends the announcements owed until ctx ends. A failure is logged (once
// a minute at most) and not retried: the next group commit announces again,
// and dispatchers poll in any case.
func (a *Announcer) Run(ctx context.Context) {
	var lastWarn time.Time
	pause := a.interval
	timer := time.NewTimer(0)
	<-timer.C
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		}
		a.rate()
		for owed := true; owed; {
			// Nothing to take: what the kick was for went out with the
			// last announcement.
			if ann, ok := a.take(); ok {
				nctx, cancel := context.WithTimeout(ctx, time.Second)
				err := a.notify(nctx, ann)
				cancel()
				if err == nil {
					a.sent.Inc()
				}
				if err != nil && ctx.Err() == nil && time.Since(lastWarn) > time.Minute {
					lastWarn = time.Now()
					a.logger.Warn("announcing stored callbacks to dispatchers failed; they find them by polling", "error", err)
				}
			}
			timer.Reset(pause)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			r := a.rate()
			select {
			case <-a.kick:
			default:
				owed = false
			}
			// The rate over the time that really passed: a timer that
			// fires late must not turn a steady rate into a busy one.
			if owed && r >= announceBusyRate {
				pause = min(2*pause, 20*a.interval)
			} else {
				pause = a.interval
			}
		}
	}
}

// take returns the announcement of the queues stored since the last one
// (any queue, when more than db.MaxAnnouncedQueues) and forgets them; false
// when none were.
func (a *Announcer) take() (db.Announcement, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.queues) == 0 {
		return db.Announcement{}, false
	}
	ann := db.Announcement{Token: a.token}
	if len(a.queues) <= db.MaxAnnouncedQueues {
		ann.Queues = slices.Sorted(maps.Keys(a.queues))
	}
	clear(a.queues)
	return ann, true
}

// rate returns the deliveries stored per second since its last call.
func (a *Announcer) rate() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	elapsed := now.Sub(a.since).Seconds()
	n := a.deliveries
	a.deliveries, a.since = 0, now
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed
}
