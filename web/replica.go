package web

import (
	"context"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"
)

// replicaReadKey marks a request whose page read from the replica.
const replicaReadKey = "replica-read"

// reads returns the store of the pages that only read: the replica when
// there is one (Config.Replica), which marks the request so that its page
// shows how current it is (render). Nothing that acts or decides delivery
// reads through it.
func (d *Dashboard) reads(c echo.Context) Store {
	if d.cfg.Replica == nil {
		return d.store
	}
	c.Set(replicaReadKey, true)
	return d.cfg.Replica
}

// replicaNote says how far the replica is behind the primary, for the page.
func (d *Dashboard) replicaNote(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := d.cfg.Replica.ReplicaStatus(ctx)
	switch {
	case err != nil:
		d.log.Warn("replica status", "error", err)
		return "Read from a replica; how far it is behind the primary is unknown right now."
	case !st.Standby:
		return "" // a primary: as current as it gets
	case st.Lag < 0:
		return "Read from a replica that has not replayed any transaction yet; it may be far behind the primary."
	case st.Streaming && st.Lag == 0:
		return "Read from a replica, up to date with the primary."
	case !st.Streaming:
		return fmt.Sprintf("Read from a replica that is not streaming from the primary; its last replayed transaction is %s old.", roundLag(st.Lag))
	default:
		return fmt.Sprintf("Read from a replica, %s behind the primary.", roundLag(st.Lag))
	}
}

func roundLag(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
