package dispatch

import (
	"math/rand/v2"

	"github.com/hookrelay/hookrelay/db"
)

// claimCursors is a claim loop's round-robin position in each logical queue
// it claims from: the last endpoint a claim served there. The claim walks a
// queue's endpoints from the one after it (DeliveryClaim), so when more
// endpoints have due work in a queue than one claim serves, the next claim
// goes on where this one stopped. Owned by one claim loop; not safe for
// concurrent use.
type claimCursors struct {
	after map[int]int64
	// top is the highest endpoint id seen, for a fresh start (reset).
	top int64
}

func newClaimCursors() *claimCursors { return &claimCursors{after: map[int]int64{}} }

// of returns the cursors of queues, in their order.
func (c *claimCursors) of(queues []int) []int64 {
	out := make([]int64, len(queues))
	for i, q := range queues {
		out[i] = c.after[q]
	}
	return out
}

// advance moves the cursor of each queue past the endpoints the claim over
// queues served: to the last of them in walk order (the walk runs upwards
// from the cursor and wraps round to it, so an endpoint at or below the
// cursor came after every one above it). full reports whether the claim
// filled its batch, and so may have stopped before some queues: a queue
// that gave nothing in a claim that was not full was walked and served
// nobody — all its due endpoints, if any, were passed or locked — and starts
// afresh from a random place, so that a run of waiting endpoints after the
// cursor cannot keep the walk from the due ones beyond it.
func (c *claimCursors) advance(queues []int, rows []db.ClaimedDelivery, full bool) {
	served := make(map[int][]int64, len(queues))
	for _, r := range rows {
		served[r.Queue] = append(served[r.Queue], r.EndpointID)
		c.top = max(c.top, r.EndpointID)
	}
	for _, q := range queues {
		eps := served[q]
		if len(eps) == 0 {
			if !full {
				c.reset(q)
			}
			continue
		}
		cur := c.after[q]
		var above, wrapped int64 = -1, -1
		for _, e := range eps {
			if e > cur {
				above = max(above, e)
			} else {
				wrapped = max(wrapped, e)
			}
		}
		if wrapped >= 0 {
			c.after[q] = wrapped
		} else {
			c.after[q] = above
		}
	}
}

func (c *claimCursors) reset(q int) {
	if c.top <= 0 {
		delete(c.after, q)
		return
	}
	c.after[q] = rand.Int64N(c.top + 1)
}
