package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReplayBatchAdapts: a batch whose transaction ran past the target
// halves the next one, down to the floor; quick ones double it back up to
// the configured size; in between it stays.
func TestReplayBatchAdapts(t *testing.T) {
	t.Parallel()
	r := NewReplayRunner(nil, ReplayConfig{Batch: 1000}, nil)
	var sizes []int
	for _, tx := range []time.Duration{
		100 * time.Millisecond, // between a quarter and the target: stays
		600 * time.Millisecond, 400 * time.Millisecond, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second,
		10 * time.Millisecond, 10 * time.Millisecond, 200 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond,
		10 * time.Millisecond, 10 * time.Millisecond,
	} {
		r.adaptBatch(tx)
		sizes = append(sizes, r.batch)
	}
	require.Equal(t, []int{1000, 500, 250, 125, 62, 50, 50, 100, 200, 200, 400, 800, 1000, 1000}, sizes)

	small := NewReplayRunner(nil, ReplayConfig{Batch: 20}, nil)
	small.adaptBatch(time.Second)
	require.Equal(t, 20, small.batch, "never above the configured size, even at the floor")
}
