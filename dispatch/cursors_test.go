package dispatch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

func TestClaimCursorsFollowTheWalk(t *testing.T) {
	t.Parallel()
	c := newClaimCursors()
	rows := func(q int, eps ...int64) []db.ClaimedDelivery {
		var out []db.ClaimedDelivery
		for _, e := range eps {
			out = append(out, db.ClaimedDelivery{Queue: q, EndpointID: e})
		}
		return out
	}
	c.advance([]int{1, 2}, rows(1, 5, 9, 7), true)
	require.Equal(t, []int64{9, 0}, c.of([]int{1, 2}), "queue 2 not reached by a full claim keeps its place")

	// Served 12 then, wrapping round, 3 and 4: the walk ended at 4.
	c.advance([]int{1}, rows(1, 12, 3, 4), true)
	require.Equal(t, []int64{4}, c.of([]int{1}))

	// A queue that gave nothing in a claim that was not full starts afresh
	// somewhere between 0 and the highest endpoint seen.
	c.advance([]int{1, 2}, rows(2, 8), false)
	require.Equal(t, int64(8), c.of([]int{2})[0])
	require.LessOrEqual(t, c.of([]int{1})[0], int64(12))
}
