package ingest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// sending is one announcement as the announcer sent it: when its NOTIFY
// started and when it returned. A pause runs from one return to the next
// start, so the NOTIFY's own round trip (tens of milliseconds on a loaded
// machine under -race) is not counted as lateness of the pause.
type sending struct{ start, done time.Time }

// TestAnnouncerLeadsCoalescesAndBacksOff: through a real LISTEN session,
// nothing is sent without a stored batch; the first batch after a quiet
// spell is announced at once; at a low rate the batches of each pause are
// announced together at its end, pause after pause; above
// announceBusyRate the pause doubles up to 20 intervals (pauses of 1, 2, 4,
// 8, 16 and 20 intervals), and after a quiet spell the next batch is
// announced at once again.
func TestAnnouncerLeadsCoalescesAndBacksOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	l, err := store.ListenDue(ctx, "hookrelay-test-listen")
	require.NoError(t, err)
	heard := make(chan []int, 1000) // the queues of each announcement heard
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
				heard <- ann.Queues
			}
		}
	}()

	sent := make(chan sending, 1000)
	notify := func(ctx context.Context, ann db.Announcement) error {
		s := sending{start: time.Now()}
		err := store.DueNotify(ctx, ann)
		s.done = time.Now()
		sent <- s
		return err
	}
	const interval = 100 * time.Millisecond
	a := NewAnnouncer(notify, "tok-1", interval, slog.New(slog.DiscardHandler), prometheus.NewCounter(prometheus.CounterOpts{Name: "sent"}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})

	// hear returns the queues of the next announcement heard through LISTEN.
	hear := func() []int {
		t.Helper()
		select {
		case q := <-heard:
			return q
		case <-time.After(5 * time.Second):
			t.Fatal("an announcement sent was not heard")
			return nil
		}
	}
	quiet := func(d time.Duration) {
		t.Helper()
		select {
		case s := <-sent:
			t.Fatalf("an announcement %v into a quiet spell", time.Since(s.start))
		case <-time.After(d):
		}
	}
	// untilQuiet adds to got the announcements sent until none is for 25
	// intervals.
	untilQuiet := func(got []sending) []sending {
		for {
			select {
			case s := <-sent:
				got = append(got, s)
			case <-time.After(25 * interval):
				return got
			}
		}
	}
	// traffic stores per deliveries every `every` (a sleep never returns
	// early, so that is an upper bound on the rate) until n announcements have
	// been sent and then for extra, and returns the announcements sent until
	// none is for 25 intervals after it, with when it started.
	traffic := func(per int, every time.Duration, n int, extra time.Duration) (time.Time, []sending) {
		t.Helper()
		start := time.Now()
		var got []sending
		var stopAt time.Time
		for stopAt.IsZero() || time.Now().Before(stopAt) {
			a.Stored(per, []int{per % 7})
			time.Sleep(every)
			select {
			case s := <-sent:
				got = append(got, s)
				if len(got) == n {
					stopAt = time.Now().Add(extra)
				}
			default:
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("only %d announcements in 30s", len(got))
			}
		}
		return start, untilQuiet(got)
	}
	// pauses returns the pauses between the announcements, in intervals.
	pauses := func(got []sending) []float64 {
		var p []float64
		for i := 1; i < len(got); i++ {
			p = append(p, float64(got[i].start.Sub(got[i-1].done))/float64(interval))
		}
		return p
	}
	// A timer never fires early; under load it fires late, so a pause may
	// run long by up to most of an interval, which still tells one interval
	// from two.
	requirePause := func(want float64, got []float64, i int) {
		t.Helper()
		require.GreaterOrEqual(t, got[i], want-0.05, "pause %d of %v (intervals)", i, got)
		require.LessOrEqual(t, got[i], want+0.9, "pause %d of %v (intervals)", i, got)
	}
	quiet(300 * time.Millisecond)

	// The queues of what was stored since the last announcement, once each.
	first := time.Now()
	a.Stored(1, []int{5, 2})
	a.Stored(1, []int{2})
	select {
	case s := <-sent:
		require.Less(t, s.start.Sub(first), interval/2, "the first batch after a quiet spell is announced at once")
	case <-time.After(3 * time.Second):
		t.Fatal("not announced")
	}
	require.Equal(t, []int{2, 5}, hear(), "announced queues")
	// The second batch went out with the first, or after it at the end of
	// the pause.
	select {
	case <-sent:
		require.Equal(t, []int{2}, hear())
	case <-time.After(3 * interval):
	}
	quiet(25 * interval)

	// 1 delivery per ≥4 ms (at most 250/s, half announceBusyRate) until 9
	// announcements: every pause stays one interval.
	start, got := traffic(1, 4*time.Millisecond, 9, 0)
	require.Less(t, got[0].start.Sub(start), interval/2, "the first batch after a quiet spell is announced at once")
	p := pauses(got)
	for i := range p {
		requirePause(1, p, i)
	}
	for range got {
		require.Equal(t, []int{1}, hear())
	}
	total := len(got)

	// 10 deliveries per ~2 ms (~5,000/s; still 1,000/s if every sleep took
	// 10 ms) until the sixth announcement and
	// half an interval more, so that one is owed: the pause doubles, capped
	// at 20 intervals; the owed one is sent 20 intervals after the sixth.
	start, got = traffic(10, 2*time.Millisecond, 6, interval/2)
	want := []float64{1, 2, 4, 8, 16, 20}
	require.Len(t, got, len(want)+1, "pauses %v (intervals)", pauses(got))
	require.Less(t, got[0].start.Sub(start), interval/2, "the first batch after a quiet spell is announced at once")
	p = pauses(got)
	for i := range p {
		requirePause(want[i], p, i)
	}
	for range got {
		require.Equal(t, []int{3}, hear())
	}
	total += len(got)

	var m dto.Metric
	require.NoError(t, a.sent.Write(&m))
	require.GreaterOrEqual(t, m.GetCounter().GetValue(), float64(1+total), "announcements counted")

	// After the quiet spell, at once again.
	again := time.Now()
	a.Stored(1, []int{0})
	select {
	case s := <-sent:
		require.Less(t, s.start.Sub(again), interval/2, "announced at once after a quiet spell")
	case <-time.After(3 * time.Second):
		t.Fatal("not announced")
	}
	require.Equal(t, []int{0}, hear())
}
