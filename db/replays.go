package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// What a replay re-delivers (Replay.Status).
const (
	ReplayDelivered = "delivered" // deliveries with a successful attempt in the window
	ReplayFailed    = "failed"    // dead letters that died in the window
	ReplayAll       = "all"       // both
)

// The states of a replay (Replay.State).
const (
	ReplayRunning   = "running"
	ReplayFinished  = "finished"
	ReplayCancelled = "cancelled"
)

// ReplaySpec is what a replay re-delivers: the past deliveries of one
// endpoint of the given status in [Since, Until), of one ordering key when
// OrderingKey is not empty.
type ReplaySpec struct {
	EndpointID  int64
	Status      string
	OrderingKey string
	Since       time.Time
	Until       time.Time
}

// Replay is a replay and its progress.
type Replay struct {
	ReplaySpec
	ID         int64
	State      string
	Total      int64 // counted at creation
	Done       int64 // deliveries queued again so far
	Failed     int64 // deliveries that could not be (still pending, message past retention, endpoint deleted)
	CreatedAt  time.Time
	FinishedAt *time.Time
	// cursor: the last source row read
	cursorAt time.Time
	cursorID int64
}

func replayFrom(r dbsqlc.Replay) Replay {
	rp := Replay{
		ReplaySpec: ReplaySpec{EndpointID: r.EndpointID, Status: r.Status, Since: r.Since, Until: r.Until},
		ID:         r.ID, State: r.State, Total: r.Total, Done: r.Done, Failed: r.Failed,
		CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, cursorAt: r.CursorAt, cursorID: r.CursorID,
	}
	if r.OrderingKey != nil {
		rp.OrderingKey = *r.OrderingKey
	}
	return rp
}

// replayPick is what a batch does with one source row.
type replayPick int

const (
	replaySkip    replayPick = iota // not the replay's (another key, a repeat)
	replayQueue                     // to be queued again
	replayMissing                   // the replay's, but its message is gone
)

func (sp ReplaySpec) pick(r dbsqlc.ReplaySourceRow) replayPick {
	switch {
	case r.Repeat:
		return replaySkip
	case !r.Found:
		return replayMissing
	case sp.OrderingKey != "" && r.OrderingKey != sp.OrderingKey:
		return replaySkip
	}
	return replayQueue
}

func (sp ReplaySpec) source(q *dbsqlc.Queries, ctx context.Context, at time.Time, id int64, scan int) ([]dbsqlc.ReplaySourceRow, error) {
	return q.ReplaySource(ctx, dbsqlc.ReplaySourceParams{
		Since: sp.Since, Until: sp.Until, EndpointID: sp.EndpointID,
		WantDelivered: sp.Status != ReplayFailed, WantFailed: sp.Status != ReplayDelivered,
		CursorAt: at, CursorID: id, Scan: int32(scan),
	})
}

// ReplayCount counts the deliveries sp would re-deliver now, reading the
// window chunk rows at a time, each read a statement (and transaction) of
// its own.
func (db *DB) ReplayCount(ctx context.Context, sp ReplaySpec, chunk int) (int64, error) {
	at, id := sp.Since, int64(0)
	var n int64
	for {
		rows, err := sp.source(db.q, ctx, at, id, chunk)
		if err != nil {
			return 0, fmt.Errorf("count replay: %w", unavailable(err))
		}
		for _, r := range rows {
			if sp.pick(r) != replaySkip {
				n++
			}
		}
		if len(rows) < chunk {
			return n, nil
		}
		last := rows[len(rows)-1]
		at, id = last.At, last.ID
	}
}

// ReplayCreate stores a running replay of sp whose total is total.
func (db *DB) ReplayCreate(ctx context.Context, sp ReplaySpec, total int64) (Replay, error) {
	var key *string
	if sp.OrderingKey != "" {
		key = &sp.OrderingKey
	}
	r, err := db.q.ReplayInsert(ctx, dbsqlc.ReplayInsertParams{
		EndpointID: sp.EndpointID, Status: sp.Status, OrderingKey: key, Since: sp.Since, Until: sp.Until, Total: total,
	})
	if err != nil {
		return Replay{}, fmt.Errorf("create replay: %w", unavailable(err))
	}
	return replayFrom(r), nil
}

// ReplayGet returns replay id or hookrelay.ENOTFOUND.
func (db *DB) ReplayGet(ctx context.Context, id int64) (Replay, error) {
	r, err := db.q.ReplayGet(ctx, id)
	if err != nil {
		return Replay{}, notFound(unavailableUnlessNoRows(err), "replay")
	}
	return replayFrom(r), nil
}

// ReplayCancel cancels replay id if it is running and reports whether it was.
func (db *DB) ReplayCancel(ctx context.Context, id int64) (Replay, bool, error) {
	r, err := db.q.ReplayCancel(ctx, id)
	if err == nil {
		rp := replayFrom(r)
		// After the cancel's commit: should it fail, the replay is cancelled
		// all the same, and the caller may repeat the cancel (it changes
		// nothing then and reports nothing again).
		if err := opsReplayFinished(ctx, db.q, rp); err != nil {
			return rp, true, fmt.Errorf("cancel replay: report it: %w", err)
		}
		return rp, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Replay{}, false, fmt.Errorf("cancel replay: %w", unavailable(err))
	}
	rp, err := db.ReplayGet(ctx, id)
	return rp, false, err
}

// ReplayListRunning returns up to limit running replays, oldest first.
func (db *DB) ReplayListRunning(ctx context.Context, limit int) ([]Replay, error) {
	rows, err := db.q.ReplayListRunning(ctx, int32(limit))
	if err != nil {
		return nil, fmt.Errorf("list replays: %w", unavailable(err))
	}
	out := make([]Replay, len(rows))
	for i, r := range rows {
		out[i] = replayFrom(r)
	}
	return out, nil
}

// ReplayListByEndpoint returns the latest limit replays of endpoint id,
// newest first.
func (db *DB) ReplayListByEndpoint(ctx context.Context, endpointID int64, limit int) ([]Replay, error) {
	rows, err := db.q.ReplayListByEndpoint(ctx, dbsqlc.ReplayListByEndpointParams{EndpointID: endpointID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list replays of endpoint %d: %w", endpointID, unavailable(err))
	}
	out := make([]Replay, len(rows))
	for i, r := range rows {
		out[i] = replayFrom(r)
	}
	return out, nil
}

// ReplayBatch is what one batch of a replay did.
type ReplayBatch struct {
	Replay Replay  // the replay after the batch
	Queued []int64 // the deliveries it queued again
	Read   int     // source rows it took (the cursor moved past them)
	// Waiting reports whether the batch stopped early, at a delivery a
	// replay chain still holds, or whose key's replay chain holds a later
	// one (see firstToWait): the replay goes on from there once they are
	// sent.
	Waiting bool
	// Tx is how long the batch's transaction took (its reads come before).
	Tx time.Duration
}

// ReplayStep runs the next batch of replay id in one transaction: it reads
// up to batch rows of the replay's window after its cursor, queues again
// those that are the replay's, and commits them with the cursor moved past
// the rows read and the counters; a batch that reads fewer than batch rows
// finishes the replay. ok is false when there was nothing to do: the replay
// is not running (finished, cancelled) or another runner holds it.
//
// The batch's reads — the window after the cursor, its keys' replay chain
// tails and which of its deliveries a replay chain holds, the bulk of its
// time — run before its transaction, each a statement
// of its own; the transaction then locks the replay, checks that its cursor
// is still where the reads began (else another runner moved it: nothing is
// done), queues and commits. Rows read early can only be more cautious: a
// delivery pending since is skipped by the insert, and a chain tail and
// the deliveries a chain holds only shrink meanwhile (this replay's runner
// is the only one adding to its chains). b.Tx is how long the transaction took.
func (db *DB) ReplayStep(ctx context.Context, id int64, batch int) (b ReplayBatch, ok bool, err error) {
	r, err := db.q.ReplayGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return ReplayBatch{}, false, nil
	}
	if err != nil {
		return ReplayBatch{}, false, fmt.Errorf("replay batch: %w", unavailable(err))
	}
	pre := replayFrom(r)
	if pre.State != ReplayRunning {
		return ReplayBatch{}, false, nil
	}
	rows, err := pre.source(db.q, ctx, pre.cursorAt, pre.cursorID, batch)
	if err != nil {
		return ReplayBatch{}, false, fmt.Errorf("replay batch: read the window: %w", unavailable(err))
	}
	read := len(rows)
	wait, err := pre.firstToWait(ctx, db.q, rows)
	if err != nil {
		return ReplayBatch{}, false, fmt.Errorf("replay batch: read the replay chains: %w", unavailable(err))
	}
	rows = rows[:wait]
	waiting := wait < read
	start := time.Now()
	err = db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		r, err := q.ReplayLock(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rp := replayFrom(r)
		if !rp.cursorAt.Equal(pre.cursorAt) || rp.cursorID != pre.cursorID {
			return nil
		}
		var p dbsqlc.ReplayEnqueueParams
		p.EndpointID = rp.EndpointID
		dead := map[int64]bool{}
		var missing int64
		for _, s := range rows {
			switch rp.pick(s) {
			case replayMissing:
				missing++
			case replayQueue:
				p.IDs = append(p.IDs, s.ID)
				p.Queues = append(p.Queues, s.Queue)
				p.Chains = append(p.Chains, hookrelay.ReplayChain(s.OrderingKey))
				p.MessageIDs = append(p.MessageIDs, s.MessageID)
				p.MessageReceivedAts = append(p.MessageReceivedAts, s.MessageReceivedAt)
				if s.Dead {
					dead[s.ID] = true
				}
			}
		}
		var queued []int64
		if len(p.IDs) > 0 {
			if queued, err = q.ReplayEnqueue(ctx, p); err != nil {
				return err
			}
		}
		var moved []int64
		for _, qid := range queued {
			if dead[qid] {
				moved = append(moved, qid)
			}
		}
		if len(moved) > 0 {
			if _, err := q.DeadLetterDeleteByIDs(ctx, moved); err != nil {
				return err
			}
		}
		adv := dbsqlc.ReplayAdvanceParams{
			ID: rp.ID, CursorAt: rp.cursorAt, CursorID: rp.cursorID,
			Done: int64(len(queued)), Failed: missing + int64(len(p.IDs)-len(queued)),
			Finished: !waiting && read < batch,
		}
		if len(rows) > 0 {
			adv.CursorAt, adv.CursorID = rows[len(rows)-1].At, rows[len(rows)-1].ID
		}
		if err := q.ReplayAdvance(ctx, adv); err != nil {
			return err
		}
		rp.cursorAt, rp.cursorID = adv.CursorAt, adv.CursorID
		rp.Done += adv.Done
		rp.Failed += adv.Failed
		if adv.Finished {
			rp.State = ReplayFinished
			now := time.Now()
			rp.FinishedAt = &now
			if err := opsReplayFinished(ctx, q, rp); err != nil {
				return err
			}
		}
		b, ok = ReplayBatch{Replay: rp, Queued: queued, Read: len(rows), Waiting: waiting}, true
		return nil
	})
	b.Tx = time.Since(start)
	if err != nil {
		return ReplayBatch{}, false, fmt.Errorf("replay batch: %w", unavailable(err))
	}
	return b, ok, nil
}

// DeliveryCountQueued returns how many of deliveries ids are still queued.
func (db *DB) DeliveryCountQueued(ctx context.Context, ids []int64) (int64, error) {
	n, err := db.q.DeliveryCountByIDs(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("count queued deliveries: %w", unavailable(err))
	}
	return n, nil
}

// firstToWait returns the index of the first of rows (source rows in
// replay order) that the replay must not queue yet; len(rows) when there is
// none. That is a delivery still queued in a replay chain (another
// replay's, not sent yet: queueing it again would fail, and the replay
// sends it again once it is sent), or one its key's ordered replay chain
// holds a later delivery (a higher id) of. A chain is ordered by id and its
// head is the lowest, so a delivery queued below a chain's tail would
// overtake the rows above it, and could go out while the tail is in
// flight; the replay waits there instead until the chain has sent them. It
// happens when a key's deliveries were delivered (or died) out of id order,
// so that the source, read in time order, yields a lower id in a later
// batch (a dead letter retried after its successors went on), and when two
// replays of one key overlap: the later one waits for the earlier one's
// deliveries of the key. To an endpoint with "ordering": "none" replayed
// deliveries are queued unordered, with no chain tail to see: there the
// replay waits only for the very deliveries another replay still has
// queued.
func (rp Replay) firstToWait(ctx context.Context, q *dbsqlc.Queries, rows []dbsqlc.ReplaySourceRow) (int, error) {
	seen := map[string]bool{}
	var chains []string
	var ids []int64
	for _, s := range rows {
		if rp.pick(s) != replayQueue {
			continue
		}
		ids = append(ids, s.ID)
		if c := hookrelay.ReplayChain(s.OrderingKey); !seen[c] {
			seen[c] = true
			chains = append(chains, c)
		}
	}
	if len(ids) == 0 {
		return len(rows), nil
	}
	got, err := q.ReplayChainTails(ctx, dbsqlc.ReplayChainTailsParams{EndpointID: rp.EndpointID, Chains: chains})
	if err != nil {
		return 0, err
	}
	tails := make(map[string]int64, len(got))
	for _, t := range got {
		tails[t.Chain] = t.Tail
	}
	held, err := q.ReplayQueuedIDs(ctx, dbsqlc.ReplayQueuedIDsParams{IDs: ids, Mark: hookrelay.ReplayChainMark})
	if err != nil {
		return 0, err
	}
	queued := make(map[int64]bool, len(held))
	for _, id := range held {
		queued[id] = true
	}
	for i, s := range rows {
		if rp.pick(s) == replayQueue && (queued[s.ID] || tails[hookrelay.ReplayChain(s.OrderingKey)] >= s.ID) {
			return i, nil
		}
	}
	return len(rows), nil
}
