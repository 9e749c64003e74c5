package dispatch

import (
	"context"
	"time"
)

// listen keeps a LISTEN session for the announcements of other processes'
// APIs and wakes the claim loops holding the queues each names, until ctx
// ends. Configuration announcements mark older cached endpoints stale, so
// rows claimed before a change but sent after it reflect it too. A lost session is opened again after ListenRetry (doubling while it
// keeps failing, up to 30 s); the claim loops are woken then too, since
// announcements made while it was away were missed (the idle pause bounds
// what that costs in any case: announcements are hints, never the only way
// a row is found).
func (d *Dispatcher) listen(ctx context.Context) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	pause := d.cfg.ListenRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		l, err := d.db.ListenDue(ctx, "hookrelay-dispatch-listen")
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.logger.Warn("LISTEN for announcements failed; claims poll until it is back", "error", err, "retry", pause)
			retry.Reset(pause)
			pause = min(2*pause, 30*time.Second)
			continue
		}
		pause = d.cfg.ListenRetry
		d.metrics.listening.Set(1)
		d.listening.Store(true)
		d.Wake()
		var lost error
		for {
			ann, err := l.Wait(ctx)
			if err != nil {
				lost = err
				break
			}
			if ann.ConfigVersion != 0 {
				d.cache.observe(ann.ConfigVersion)
				continue
			}
			if ann.Token != d.cfg.SelfToken || ann.Token == "" {
				d.metrics.notifications.Inc()
				d.WakeQueues(ann.Queues)
			}
		}
		d.metrics.listening.Set(0)
		d.listening.Store(false)
		l.Close()
		if ctx.Err() != nil {
			return
		}
		d.logger.Warn("LISTEN session lost; claims poll until it is back", "error", lost, "retry", pause)
		retry.Reset(pause)
	}
}
