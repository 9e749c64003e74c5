package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ledgerFixture: 3 keys; key k goes to endpoints {k, 10+k} (fan-out 2).
func ledgerFixture(t *testing.T) (*Ledger, time.Time) {
	t.Helper()
	l := NewLedger(3, func(k int) []int { return []int{k, 10 + k} })
	return l, time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
}

func TestLedgerCleanRunHasNothingLost(t *testing.T) {
	t.Parallel()
	l, t0 := ledgerFixture(t)
	for seq := 1; seq <= 3; seq++ {
		l.Acked(0, seq, t0.Add(time.Duration(seq)*time.Millisecond))
	}
	for seq := 1; seq <= 3; seq++ {
		at := t0.Add(time.Duration(seq)*time.Millisecond + 5*time.Millisecond)
		l.Arrived(0, 0, seq, at, true)
		l.Arrived(10, 0, seq, at, true)
	}
	exp, got := l.Progress()
	require.EqualValues(t, 6, exp)
	require.EqualValues(t, 6, got)
	a := l.Analyze()
	require.Equal(t, 3, a.Acknowledged)
	require.Equal(t, 6, a.Expected)
	require.Equal(t, 6, a.Delivered)
	require.Zero(t, a.Lost)
	require.Zero(t, a.Duplicates)
	require.Zero(t, a.OrderViolations)
	require.Len(t, a.Latencies, 6)
	for _, d := range a.Latencies {
		require.Equal(t, 5*time.Millisecond, d)
	}
	require.True(t, t0.Add(8*time.Millisecond).Equal(l.LastDelivery()))
}

func TestLedgerCountsLostPerEndpoint(t *testing.T) {
	t.Parallel()
	l, t0 := ledgerFixture(t)
	l.Acked(1, 1, t0)
	l.Acked(1, 2, t0)
	l.Arrived(1, 1, 1, t0, true)
	l.Arrived(1, 1, 2, t0, true)
	l.Arrived(11, 1, 1, t0, true)
	// endpoint 11 never gets seq 2; key 2 was never acknowledged, so its
	// silence is not a loss.
	a := l.Analyze()
	require.Equal(t, 4, a.Expected)
	require.Equal(t, 3, a.Delivered)
	require.Equal(t, 1, a.Lost)
	require.Zero(t, a.OrderViolations)
}

func TestLedgerFailedAttemptIsNotADelivery(t *testing.T) {
	t.Parallel()
	l, t0 := ledgerFixture(t)
	l.Acked(0, 1, t0)
	l.Arrived(0, 0, 1, t0, false) // sink answered 500
	l.Arrived(10, 0, 1, t0, true)
	a := l.Analyze()
	require.Equal(t, 1, a.Lost)
	// the retry succeeds: delivered, and the earlier failure is no duplicate
	l.Arrived(0, 0, 1, t0.Add(time.Second), true)
	a = l.Analyze()
	require.Zero(t, a.Lost)
	require.Zero(t, a.Duplicates)
	require.Zero(t, a.OrderViolations)
}

func TestLedgerCountsDuplicates(t *testing.T) {
	t.Parallel()
	l, t0 := ledgerFixture(t)
	l.Acked(2, 1, t0)
	l.Arrived(2, 2, 1, t0, true)
	l.Arrived(2, 2, 1, t0, true)
	l.Arrived(2, 2, 1, t0, true)
	l.Arrived(12, 2, 1, t0, true)
	a := l.Analyze()
	require.Equal(t, 2, a.Duplicates)
	require.Equal(t, 2, a.Delivered)
	_, got := l.Progress()
	require.EqualValues(t, 2, got, "progress counts distinct deliveries")
}

func TestLedgerDetectsOrderViolations(t *testing.T) {
	t.Parallel()
	l, t0 := ledgerFixture(t)
	for seq := 1; seq <= 4; seq++ {
		l.Acked(0, seq, t0)
	}
	// endpoint 0: 1, 3 (violation: 2 not delivered), 2, 4
	for _, seq := range []int{1, 3, 2, 4} {
		l.Arrived(0, 0, seq, t0, true)
	}
	// endpoint 10: 1 fails, then 2 is attempted before 1 succeeded (violation)
	l.Arrived(10, 0, 1, t0, false)
	l.Arrived(10, 0, 2, t0, false)
	l.Arrived(10, 0, 1, t0, true)
	l.Arrived(10, 0, 2, t0, true)
	l.Arrived(10, 0, 3, t0, true)
	l.Arrived(10, 0, 4, t0, true)
	a := l.Analyze()
	require.Equal(t, 2, a.OrderViolations)
	require.Zero(t, a.Lost)
	require.Zero(t, a.Duplicates)
}

func TestLedgerOrderSkipsUnacknowledgedSeqs(t *testing.T) {
	t.Parallel()
	l, t0 := ledgerFixture(t)
	// seq 2 was rejected by the service: 1 then 3 is in order.
	l.Acked(0, 1, t0)
	l.Acked(0, 3, t0)
	l.Arrived(0, 0, 1, t0, true)
	l.Arrived(0, 0, 3, t0, true)
	l.Arrived(10, 0, 1, t0, true)
	l.Arrived(10, 0, 2, t0, true) // stored despite an error answer
	l.Arrived(10, 0, 3, t0, true)
	a := l.Analyze()
	require.Zero(t, a.OrderViolations)
	require.Zero(t, a.Lost)
	require.Equal(t, 1, a.Unexpected)
	require.Equal(t, 4, a.Delivered)
}

func TestLedgerRedeliveryAfterLaterSeqIsADuplicateNotAViolation(t *testing.T) {
	t.Parallel()
	l, t0 := ledgerFixture(t)
	l.Acked(0, 1, t0)
	l.Acked(0, 2, t0)
	for _, seq := range []int{1, 2, 1} { // a crash redelivered 1
		l.Arrived(0, 0, seq, t0, true)
	}
	l.Arrived(10, 0, 1, t0, true)
	l.Arrived(10, 0, 2, t0, true)
	a := l.Analyze()
	require.Equal(t, 1, a.Duplicates)
	require.Zero(t, a.OrderViolations)
}
