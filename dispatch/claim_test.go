package dispatch

import (
	"testing"
	"time"
)

// TestPartialWait: BusyPoll while claims are at least a quarter full, longer
// the emptier they were, never above 4×BusyPoll.
func TestPartialWait(t *testing.T) {
	t.Parallel()
	busy := 5 * time.Millisecond
	for _, tc := range []struct {
		got, batch int
		want       time.Duration
	}{
		{got: 49, batch: 50, want: busy},
		{got: 12, batch: 50, want: busy},
		{got: 6, batch: 50, want: 10 * time.Millisecond},
		{got: 4, batch: 50, want: 15 * time.Millisecond},
		{got: 1, batch: 50, want: 20 * time.Millisecond},
		{got: 1, batch: 2, want: busy},
		{got: 0, batch: 1, want: busy},
	} {
		if w := partialWait(tc.got, tc.batch, busy); w != tc.want {
			t.Errorf("partialWait(%d, %d) = %v, want %v", tc.got, tc.batch, w, tc.want)
		}
	}
}
