package testenv

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Tick is how often Eventually and EventuallyErr look at their condition.
const Tick = 20 * time.Millisecond

// StopTimeout is how long the cleanup of Go waits for its function to
// return before it fails the test.
const StopTimeout = 30 * time.Second

// Eventually waits until cond holds, looking every Tick, and fails the
// test when it still does not after timeout. cond runs on the test's
// goroutine, so it may call require (unlike testify's Eventually, which
// runs it on another).
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallyErr(t, timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet(what)
	})
}

// EventuallyErr waits until cond returns nil, looking every Tick, and
// fails the test with cond's last error when it still does not after
// timeout. The error says what was seen, e.g. "delivered 3 of 10".
func EventuallyErr(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: timed out after %s: %v", timeout, err)
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatalf("testenv: the test ended while waiting: %v", err)
		}
	}
}

type errNotYet string

func (e errNotYet) Error() string { return "waiting for " + string(e) }

// WaitFor returns the next value received from ch (the zero value once ch
// is closed: closing is a signal too), failing the test when none comes
// within timeout.
func WaitFor[T any](t testing.TB, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("testenv: timed out after %s waiting for %s", timeout, what)
	}
	panic("unreachable")
}

// Go runs f in a goroutine with a context that stop cancels. stop waits for
// f to return (failing the test after StopTimeout) and returns its error;
// it runs at the test's cleanup too, and only once. what names f in
// failures.
func Go(t testing.TB, what string, f func(context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(StopTimeout):
				t.Errorf("testenv: %s did not stop within %s", what, StopTimeout)
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}
