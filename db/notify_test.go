package db_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestDueNotifyReachesListeners: an announcement reaches every listening
// session of the database with its sender's token, none of another database;
// a listener whose session is terminated reports it lost.
func TestDueNotifyReachesListeners(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := db.Open(ctx, db.Config{URL: dbtest.NewURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	other, err := db.Open(ctx, db.Config{URL: dbtest.NewURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(other.Close)

	var listeners []*db.DueListener
	for range 2 {
		l, err := store.ListenDue(ctx, "hookrelay-test-listen")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		listeners = append(listeners, l)
	}
	elsewhere, err := other.ListenDue(ctx, "hookrelay-test-listen")
	require.NoError(t, err)
	t.Cleanup(func() { elsewhere.Close() })

	sent := []db.Announcement{{Token: "process-a", Queues: []int{0, 7, 31}}, {Token: "process-b"}}
	for _, a := range sent {
		require.NoError(t, store.DueNotify(ctx, a))
	}
	for _, l := range listeners {
		for _, want := range sent {
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			got, err := l.Wait(wctx)
			wcancel()
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = elsewhere.Wait(wctx)
	wcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "another database's listener heard nothing")

	conn, err := pgx.Connect(ctx, dbtest.NewURL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	// A terminated session: Wait says so, as unavailable.
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", listeners[0].PID()).Scan(&ok))
	require.True(t, ok)
	wctx, wcancel = context.WithTimeout(ctx, 10*time.Second)
	_, err = listeners[0].Wait(wctx)
	wcancel()
	require.Error(t, err)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(err), "%v", err)
	// The other listener still hears.
	require.NoError(t, store.DueNotify(ctx, db.Announcement{Token: "process-c"}))
	wctx, wcancel = context.WithTimeout(ctx, 5*time.Second)
	got, err := listeners[1].Wait(wctx)
	wcancel()
	require.NoError(t, err)
	require.Equal(t, "process-c", got.Token)
}

// TestAnnouncementPayload: queue lists survive the round trip sorted and
// without repeats; too many queues, or anything but a list of queue numbers
// after the token, mean "any queue".
func TestAnnouncementPayload(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		payload string
		want    db.Announcement
	}{
		{"tok", db.Announcement{Token: "tok"}},
		{"tok 3", db.Announcement{Token: "tok", Queues: []int{3}}},
		{"tok 9,3,3,0", db.Announcement{Token: "tok", Queues: []int{0, 3, 9}}},
		{"tok 1,,2", db.Announcement{Token: "tok"}},
		{"tok -1", db.Announcement{Token: "tok"}},
		{"tok 1 2", db.Announcement{Token: "tok"}},
		{"tok x", db.Announcement{Token: "tok"}},
		{"tok ", db.Announcement{Token: "tok"}},
		{"", db.Announcement{}},
	} {
		require.Equal(t, c.want, db.ParseAnnouncement(c.payload), "%q", c.payload)
	}
	many := make([]int, db.MaxAnnouncedQueues+1)
	for i := range many {
		many[i] = i
	}
	require.Equal(t, "tok", db.Announcement{Token: "tok", Queues: many}.String())
	require.Equal(t, db.Announcement{Token: "tok", Queues: many[:db.MaxAnnouncedQueues]},
		db.ParseAnnouncement(db.Announcement{Token: "tok", Queues: many[:db.MaxAnnouncedQueues]}.String()))
}

// FuzzParseAnnouncement: any payload decodes without panicking, to at most
// MaxAnnouncedQueues sorted distinct queues, and what it decodes to encodes
// back to a payload that decodes the same.
func FuzzParseAnnouncement(f *testing.F) {
	for _, s := range []string{"tok", "tok 1,2,3", "tok 3,1", "a b c", "tok 99999999999999999999", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		a := db.ParseAnnouncement(payload)
		require.LessOrEqual(t, len(a.Queues), db.MaxAnnouncedQueues)
		for i := 1; i < len(a.Queues); i++ {
			require.Less(t, a.Queues[i-1], a.Queues[i])
		}
		require.Equal(t, a, db.ParseAnnouncement(a.String()))
	})
}

// TestFollowConfigReportsListening: FollowConfig reports its session
// listening once it has reloaded after LISTEN, not listening when the
// session is lost (the caller goes back to its TTL), and listening again
// after the reload that follows the new session; a change announced
// meanwhile reloads.
func TestFollowConfigReportsListening(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store, err := db.Open(ctx, db.Config{URL: url, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(store.Close)

	reloads := make(chan struct{}, 16)
	states := make(chan bool, 16)
	followCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		store.FollowConfig(followCtx, "hookrelay-test-follow", "the test", slog.New(slog.DiscardHandler),
			func(context.Context) { reloads <- struct{}{} }, func(on bool) { states <- on })
	}()
	next := func(what string) bool {
		t.Helper()
		select {
		case on := <-states:
			return on
		case <-ctx.Done():
			t.Fatalf("no listening report: %s", what)
			return false
		}
	}
	reloaded := func(what string) {
		t.Helper()
		select {
		case <-reloads:
		case <-ctx.Done():
			t.Fatalf("no reload: %s", what)
		}
	}
	reloaded("first session")
	require.True(t, next("first session"))

	// A change (any committed configuration version bump) reloads.
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `INSERT INTO merchants (name, api_key_hash, api_key_prefix) VALUES ('follow', '\x01', 'hrm_f')`)
	require.NoError(t, err)
	reloaded("announced change")
	require.Empty(t, states, "still listening")

	_, err = conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hookrelay-test-follow'`)
	require.NoError(t, err)
	require.False(t, next("session lost"))
	reloaded("second session")
	require.True(t, next("second session"))

	stop()
	<-done
	require.False(t, next("stopped"))
}

// TestRefreshEvery: a cache reloads every TTL without a LISTEN session,
// every ListenedRefresh with one (its TTL when longer).
func TestRefreshEvery(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Second, db.RefreshEvery(time.Second, false))
	require.Equal(t, db.ListenedRefresh, db.RefreshEvery(time.Second, true))
	require.Equal(t, time.Minute, db.RefreshEvery(time.Minute, true))
}
