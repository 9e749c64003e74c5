package ingest

import (
	"sync"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/httperr"
)

// quotaRetryAfter is the Retry-After (seconds) of a callback refused for its
// carrier's share: a group commit drains a saturated queue in well under it.
const quotaRetryAfter = 1

// carrierQuota shares the group commit among carriers once it is saturated:
// while at least saturation messages are waiting for a batch or being
// committed, a carrier may have at most its share of them waiting — the
// saturation level divided among the carriers that have messages waiting,
// itself included — and a callback beyond it is refused at once (429) rather
// than queued behind the others. Below saturation nothing is refused, so a
// lone carrier may use every batch slot until the commit falls behind.
type carrierQuota struct {
	saturation int

	mu      sync.Mutex // guards total and pending
	total   int
	pending map[int64]int // carrier id -> messages waiting; no zero entries
}

func newCarrierQuota(saturation int) *carrierQuota {
	return &carrierQuota{saturation: saturation, pending: map[int64]int{}}
}

// take counts one more waiting message of carrier, or refuses it when the
// group commit is saturated and the carrier holds its share already. Every
// nil return must be matched by a done.
func (q *carrierQuota) take(carrier int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	have := q.pending[carrier]
	if q.total >= q.saturation {
		carriers := len(q.pending)
		if have == 0 {
			carriers++
		}
		if share := (q.saturation + carriers - 1) / carriers; have >= share {
			return hookrelay.WithReason(httperr.WithRetryAfter(hookrelay.Errorf(hookrelay.ERATELIMIT,
				"ingest is saturated and this carrier has its share (%d) of the callbacks waiting to be stored; retry later", share),
				quotaRetryAfter), hookrelay.ReasonQuota)
		}
	}
	q.pending[carrier] = have + 1
	q.total++
	return nil
}

// done counts a message of carrier as answered.
func (q *carrierQuota) done(carrier int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total--
	if n := q.pending[carrier] - 1; n > 0 {
		q.pending[carrier] = n
	} else {
		delete(q.pending, carrier)
	}
}

// waiting returns the messages waiting now.
func (q *carrierQuota) waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}
