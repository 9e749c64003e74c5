package ingest

import (
	"context"
	"log/slog"
	"time"
)

// announcer tells dispatchers in other processes that callbacks were stored
// (db.DueNotify), at most once per interval: the first group commit after a
// quiet interval is announced at once, and those within the interval after
// an announcement are announced together at its end. A dispatcher that is
// busy claiming ignores announcements, so under load their cost is bounded
// by the interval (100 small transactions a second at 10 ms), not by the
// callback rate.
type announcer struct {
	notify   func(ctx context.Context, token string) error
	token    string
	interval time.Duration
	logger   *slog.Logger
	kick     chan struct{} // buffered 1: an announcement is owed
}

func newAnnouncer(notify func(context.Context, string) error, token string, interval time.Duration, logger *slog.Logger) *announcer {
	return &announcer{notify: notify, token: token, interval: interval, logger: logger, kick: make(chan struct{}, 1)}
}

// stored records that callbacks were committed. It never blocks.
func (a *announcer) stored() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// run sends the announcements owed until ctx ends. A failure is logged (once
// a minute at most) and not retried: the next group commit announces again,
// and dispatchers poll in any case.
func (a *announcer) run(ctx context.Context) {
	var lastWarn time.Time
	pause := time.NewTimer(0)
	<-pause.C
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		}
		nctx, cancel := context.WithTimeout(ctx, time.Second)
		err := a.notify(nctx, a.token)
		cancel()
		if err != nil && ctx.Err() == nil && time.Since(lastWarn) > time.Minute {
			lastWarn = time.Now()
			a.logger.Warn("announcing stored callbacks to dispatchers failed; they find them by polling", "error", err)
		}
		pause.Reset(a.interval)
		select {
		case <-ctx.Done():
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}
