package ingest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestAnnouncerLeadsCoalescesAndBacksOff: through a real LISTEN session,
// nothing is sent without a stored batch; the first batch after a quiet
// spell is announced at once; at a low rate the batches of each pause are
// announced together at its end, pause after pause; above
// announceBusyRate the pause doubles up to 20 intervals (announcements at 0,
// 1, 3, 7, 15, 31, 51 intervals), and after a quiet spell the next batch is
// announced at once again.
func TestAnnouncerLeadsCoalescesAndBacksOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	l, err := store.ListenDue(ctx, "hookrelay-test-listen")
	require.NoError(t, err)
	got := make(chan time.Time, 1000)
	queues := make(chan []int, 1000)
	readerDone := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-readerDone
	})
	go func() { // owns l
		defer close(readerDone)
		defer l.Close()
		for {
			ann, err := l.Wait(ctx)
			if err != nil {
				return
			}
			if ann.Token == "tok-1" {
				got <- time.Now()
				queues <- ann.Queues
			}
		}
	}()

	const interval = 100 * time.Millisecond
	a := newAnnouncer(store.DueNotify, "tok-1", interval, slog.New(slog.DiscardHandler), newMetrics(nil).announcements)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
	quiet := func(d time.Duration) {
		t.Helper()
		select {
		case t0 := <-got:
			t.Fatalf("an announcement %v into a quiet spell", time.Since(t0))
		case <-time.After(d):
		}
	}
	// untilQuiet adds to at the announcements heard until quiet for 25
	// intervals, as times since start.
	untilQuiet := func(start time.Time, at []time.Duration) []time.Duration {
		for {
			select {
			case t0 := <-got:
				at = append(at, t0.Sub(start))
			case <-time.After(25 * interval):
				return at
			}
		}
	}
	// traffic stores per deliveries every 2 ms for d and returns the
	// announcements heard until quiet for 25 intervals after it, as times
	// since its start.
	traffic := func(per int, d time.Duration) []time.Duration {
		start := time.Now()
		for time.Since(start) < d {
			a.stored(per, []int{per % 7})
			time.Sleep(2 * time.Millisecond)
		}
		return untilQuiet(start, nil)
	}
	// burst stores per deliveries every 2 ms until n announcements have
	// been heard and then for extra, and returns the announcements heard
	// until quiet for 25 intervals after it, as times since its start.
	burst := func(per, n int, extra time.Duration) []time.Duration {
		start := time.Now()
		var at []time.Duration
		var stopAt time.Time
		for stopAt.IsZero() || time.Now().Before(stopAt) {
			a.stored(per, []int{per % 7})
			time.Sleep(2 * time.Millisecond)
			select {
			case t0 := <-got:
				at = append(at, t0.Sub(start))
				if len(at) == n {
					stopAt = time.Now().Add(extra)
				}
			default:
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("only %d announcements in 30s: %v", len(at), at)
			}
		}
		return untilQuiet(start, at)
	}
	quiet(300 * time.Millisecond)

	// The queues of what was stored since the last announcement, once each.
	first := time.Now()
	a.stored(1, []int{5, 2})
	a.stored(1, []int{2})
	select {
	case t0 := <-got:
		require.Less(t, t0.Sub(first), interval/2, "the first batch after a quiet spell is announced at once")
	case <-time.After(3 * time.Second):
		t.Fatal("not announced")
	}
	require.Equal(t, []int{2, 5}, <-queues, "announced queues")
	// The second batch went out with the first, or after it at the end of
	// the pause.
	select {
	case <-got:
		require.Equal(t, []int{2}, <-queues)
	case <-time.After(3 * interval):
	}
	quiet(25 * interval)

	// 1 delivery per ~2 ms (under 500/s): every pause stays one interval.
	at := traffic(1, 10*interval)
	require.GreaterOrEqual(t, len(at), 9, "announcements at %v", at)
	require.LessOrEqual(t, len(at), 12, "announcements at %v", at)
	require.Less(t, at[0], interval/2, "the first batch after a quiet spell is announced at once")
	for range at {
		require.Equal(t, []int{1}, <-queues)
	}
	for i := 1; i < len(at); i++ {
		require.InDelta(t, float64(interval), float64(at[i]-at[i-1]), float64(interval/2), "pauses of one interval: %v", at)
	}

	// 10 deliveries per ~2 ms (over 500/s) until the sixth announcement
	// (at 31 intervals) and half an interval more, so that one is owed: the
	// pause doubles, capped at 20 intervals; the owed one is sent 20
	// intervals after the sixth. (Stopping after a fixed time instead made
	// the owed one depend on how late the announcements ran under load.)
	at = burst(10, 6, interval/2)
	want := []time.Duration{0, 1, 3, 7, 15, 31, 51}
	require.Len(t, at, len(want), "announcements at %v", at)
	for range at {
		require.Equal(t, []int{3}, <-queues)
	}
	// Each pause counts from the announcement before it, so compare the
	// pauses: lateness under load (-race, a busy CI machine) adds up in the
	// absolute times but not in them. The first, at once, is only bounded by
	// the one interval a pause would have taken (it was seen 98 ms late on a
	// loaded CI machine).
	require.Less(t, at[0], interval, "the first batch after a quiet spell is announced at once")
	for i := 1; i < len(want); i++ {
		require.InDelta(t, float64((want[i]-want[i-1])*interval), float64(at[i]-at[i-1]), float64(interval/2),
			"pause before announcement %d of %v", i, at)
	}

	var sent dto.Metric
	require.NoError(t, a.sent.Write(&sent))
	require.GreaterOrEqual(t, sent.GetCounter().GetValue(), float64(1+9+len(want)), "announcements counted")

	// After the quiet spell, at once again.
	again := time.Now()
	a.stored(1, []int{0})
	select {
	case t0 := <-got:
		require.Less(t, t0.Sub(again), interval/2, "announced at once after a quiet spell")
	case <-time.After(3 * time.Second):
		t.Fatal("not announced")
	}
}
