package db

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Announcement is what DueNotify sends and DueListener.Wait receives.
type Announcement struct {
	// Token names the sending process.
	Token string
	// Queues are the logical queues that got deliveries, ascending; nil
	// means any (too many to list, or an announcement that did not say).
	Queues []int
	// ConfigVersion, when not 0, makes this a configuration announcement
	// instead: carriers, merchants, endpoints or secrets changed, and the
	// configuration is now at this version (Token and Queues are empty).
	ConfigVersion int64
}

// configChannel is the channel of configuration announcements (the trigger
// of migration 00120 sends them).
const configChannel = "hookrelay_config"

// MaxAnnouncedQueues is the most queues an announcement lists; with more,
// it names none (any queue may have rows), which costs a listener no more
// than a wake-up of every claim loop.
const MaxAnnouncedQueues = 64

// String encodes a as the NOTIFY payload: the token, then, if any, a space
// and the queues, comma-separated.
func (a Announcement) String() string {
	if len(a.Queues) == 0 || len(a.Queues) > MaxAnnouncedQueues {
		return a.Token
	}
	var b strings.Builder
	b.WriteString(a.Token)
	for i, q := range a.Queues {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(q))
	}
	return b.String()
}

// parseAnnouncement decodes a NOTIFY payload. It never fails: anything after
// the token that is not a list of queue numbers (from a sender of another
// version, or a hand-written NOTIFY) decodes as "any queue", so a malformed
// hint costs a wake-up of every loop, never a missed one.
func parseAnnouncement(payload string) Announcement {
	token, list, found := strings.Cut(payload, " ")
	a := Announcement{Token: token}
	if !found {
		return a
	}
	parts := strings.Split(list, ",")
	if len(parts) > MaxAnnouncedQueues {
		return a
	}
	qs := make([]int, 0, len(parts))
	for _, p := range parts {
		q, err := strconv.Atoi(p)
		if err != nil || q < 0 || q > 1<<20 {
			return a
		}
		qs = append(qs, q)
	}
	slices.Sort(qs)
	a.Queues = slices.Compact(qs)
	return a
}

// DueNotify announces on the wake-up channel that deliveries were just
// committed (see Announcement). It runs in its own transaction (never call it
// inside a group commit: notifying commits are serialised cluster-wide) and
// does not wait for a WAL flush.
func (db *DB) DueNotify(ctx context.Context, a Announcement) error {
	if err := db.q.DueNotify(ctx, a.String()); err != nil {
		return fmt.Errorf("notify dispatchers: %w", unavailable(err))
	}
	return nil
}

// DueListener is a dedicated session (see OpenSession) LISTENing on the
// wake-up channel: it stays connected and idle, never inside a transaction.
// It is not safe for concurrent use.
type DueListener struct {
	sess *Session
}

// ListenDue opens a session that receives DueNotify's announcements and the
// configuration announcements from now on, with the pool's timeouts;
// appName is its application_name.
func (db *DB) ListenDue(ctx context.Context, appName string) (*DueListener, error) {
	return db.listen(ctx, appName, true)
}

// ListenConfig opens a session that receives only the configuration
// announcements.
func (db *DB) ListenConfig(ctx context.Context, appName string) (*DueListener, error) {
	return db.listen(ctx, appName, false)
}

func (db *DB) listen(ctx context.Context, appName string, due bool) (*DueListener, error) {
	sess, err := db.OpenSession(ctx, SessionConfig{AppName: appName, StatementTimeout: db.cfg.StatementTimeout,
		LockTimeout: db.cfg.LockTimeout, IdleInTransactionTimeout: db.cfg.IdleInTransactionTimeout})
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	err = sess.q.ConfigListen(ctx)
	if err == nil && due {
		err = sess.q.DueListen(ctx)
	}
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("listen: %w", unavailable(err))
	}
	return &DueListener{sess: sess}, nil
}

// ListenedRefresh is how often a cache that follows the configuration
// announcements (FollowConfig) reloads anyway while its LISTEN session is
// up (see RefreshEvery). A live session is told of every committed change
// (the triggers of migration 00120 announce it in the changing
// transaction), so the reload only bounds what a change that escaped them
// costs: one written with the triggers disabled, or to a table they do not
// watch.
const ListenedRefresh = 30 * time.Second

// RefreshEvery returns how often a cache with the TTL ttl reloads: every
// ttl while it does not follow the announcements (listening false: no
// LISTEN session, or it is lost), and every ListenedRefresh (ttl when
// longer) while it does.
func RefreshEvery(ttl time.Duration, listening bool) time.Duration {
	if !listening {
		return ttl
	}
	return max(ttl, ListenedRefresh)
}

// FollowConfig calls reload now and at every configuration announcement
// of any process (ListenConfig, as application appName) until ctx ends. A
// lost session is opened again after a pause (doubling from 500 ms up to
// 30 s), and reload is called again then, since changes made while it was
// away were not announced to it; what names what follows the changes in
// the log. It needs LISTEN, which a pooler in transaction mode does not
// carry: callers also reload by a TTL. listening (may be nil) is called
// with true once a session listens and reload has run after it, and with
// false when the session is lost and when FollowConfig returns: while it
// is true, every change committed since is announced to the caller, which
// may then reload by its TTL less often (RefreshEvery).
func (db *DB) FollowConfig(ctx context.Context, appName, what string, logger *slog.Logger, reload func(context.Context), listening func(bool)) {
	if listening == nil {
		listening = func(bool) {}
	}
	const first = 500 * time.Millisecond
	pause := first
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		l, err := db.ListenConfig(ctx, appName)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Warn("LISTEN for configuration changes failed; "+what+" follows them by its TTL until it is back", "error", err, "retry", pause)
			retry.Reset(pause)
			pause = min(2*pause, 30*time.Second)
			continue
		}
		pause = first
		reload(ctx)
		listening(true)
		for {
			if _, err = l.Wait(ctx); err != nil {
				break
			}
			reload(ctx)
		}
		listening(false)
		l.Close()
		if ctx.Err() != nil {
			return
		}
		logger.Warn("LISTEN session for configuration changes lost; "+what+" follows them by its TTL until it is back", "error", err, "retry", pause)
		retry.Reset(pause)
	}
}

// Wait blocks until an announcement arrives and returns it. An error means
// the session is lost (or ctx ended): close the listener and open another.
func (l *DueListener) Wait(ctx context.Context) (Announcement, error) {
	for {
		n, err := l.sess.conn.WaitForNotification(ctx)
		if err != nil {
			return Announcement{}, fmt.Errorf("wait for notification: %w", unavailable(err))
		}
		if n.Channel != configChannel {
			return parseAnnouncement(n.Payload), nil
		}
		if v, err := strconv.ParseInt(n.Payload, 10, 64); err == nil && v > 0 {
			return Announcement{ConfigVersion: v}, nil
		}
	}
}

// Close closes the session.
func (l *DueListener) Close() { l.sess.Close() }
