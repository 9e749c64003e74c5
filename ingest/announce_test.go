package ingest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestAnnouncerLeadsAndCoalesces: through a real LISTEN session, the first
// stored batch after a quiet interval is announced at once; the many stored
// within the interval after it become one announcement, sent when the
// interval ends; nothing is sent without a stored batch.
func TestAnnouncerLeadsAndCoalesces(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	l, err := store.ListenDue(ctx, "hookrelay-test-listen")
	require.NoError(t, err)
	type heard struct {
		token string
		at    time.Time
	}
	got := make(chan heard, 100)
	readerDone := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-readerDone
	})
	go func() { // owns l
		defer close(readerDone)
		defer l.Close(context.Background())
		for {
			tok, err := l.Wait(ctx)
			if err != nil {
				return
			}
			got <- heard{tok, time.Now()}
		}
	}()

	const interval = 2 * time.Second
	a := newAnnouncer(store.DueNotify, "tok-1", interval, slog.New(slog.DiscardHandler))
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
	select {
	case h := <-got:
		t.Fatalf("announced %q with nothing stored", h.token)
	case <-time.After(300 * time.Millisecond):
	}

	first := time.Now()
	a.stored()
	h := <-got
	require.Equal(t, "tok-1", h.token)
	require.Less(t, h.at.Sub(first), interval/2, "the first batch after a quiet interval is announced at once")

	for range 200 {
		a.stored()
		time.Sleep(time.Millisecond)
	}
	h = <-got
	require.GreaterOrEqual(t, h.at.Sub(first), interval-50*time.Millisecond, "not before the interval ends")
	select {
	case h := <-got:
		t.Fatalf("a third announcement (%q, %v after the first) for batches within one interval", h.token, h.at.Sub(first))
	case <-time.After(interval + 500*time.Millisecond):
	}
}
