package db

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// AuditEntry is one entry of the audit log (package audit keeps it).
type AuditEntry struct {
	// ID is the entry's place in the chain: 1, 2, 3... without gaps.
	ID int64
	At time.Time
	// The actor: how it authenticated (access.Kind), its role, its ids
	// (0 when not of its kind), its name for people, where it came from.
	ActorKind       string
	ActorRole       string
	ActorUserID     int64
	ActorTokenID    int64
	ActorSessionID  int64
	ActorMerchantID int64
	ActorCarrierID  int64
	ActorName       string
	Addr            string
	UserAgent       string
	// Action is what was done ("endpoint.update"), to TargetType
	// TargetID ("endpoint", "42").
	Action     string
	TargetType string
	TargetID   string
	// Before and After are the target's configuration as JSON text, secrets
	// redacted ("" for none).
	Before string
	After  string
	// Result is "ok" or the error code; Error the error's message.
	Result string
	Error  string
	// PrevHash is the hash of the entry before (of the anchor for the
	// first retained one); Hash is SHA-256(PrevHash || the canonical
	// encoding of the other fields).
	PrevHash []byte
	Hash     []byte
}

// AuditHead is the chain's head: its newest entry, and the anchor the
// retained log starts from (the last entry retention dropped; 0 and zero
// bytes before any drop).
type AuditHead struct {
	LastID     int64
	LastAt     time.Time
	Hash       []byte
	AnchorID   int64
	AnchorHash []byte
}

// AuditChain is how entries are streamed (package audit).
type AuditChain struct {
	// Event returns the data of e's audit.entry operational webhook event,
	// written into the outbox in the append's transaction when an ops
	// endpoint subscribes to audit.entry by name; the append sets its id,
	// at, prev_hash and hash. Nil: no event.
	Event func(e *AuditEntry) []byte
}

// AuditAppend appends e to the chain in one statement
// (hookrelay_audit_append): under the head's lock it gives e the next id
// and the head's hash as PrevHash, moves e.At up to the head's time if the
// clock went back (a day partition then holds a contiguous id range),
// hashes it (SHA-256 of PrevHash and the canonical encoding package audit
// writes and verifies), inserts it and moves the head. Within a unit of
// work (BeginUnit) it is sent with the unit's COMMIT, in the same round
// trip, so the entry commits with the change it records and its failure is
// the commit's; outside one, in a transaction of its own. The day
// partition of e.At must exist (AuditEnsurePartitions).
func (db *DB) AuditAppend(ctx context.Context, e AuditEntry, chain AuditChain) error {
	q := db.q
	if u := db.unitOf(ctx); u != nil {
		q = dbsqlc.New(u.atCommit())
	}
	return unavailable(q.AuditAppend(ctx, auditAppendParams(&e, chain)))
}

func auditAppendParams(e *AuditEntry, chain AuditChain) dbsqlc.AuditAppendParams {
	e.At = e.At.UTC().Truncate(time.Microsecond)
	p := dbsqlc.AuditAppendParams{
		At: e.At, ActorKind: e.ActorKind, ActorRole: e.ActorRole, ActorUserID: e.ActorUserID,
		ActorTokenID: e.ActorTokenID, ActorSessionID: e.ActorSessionID, ActorMerchantID: e.ActorMerchantID,
		ActorCarrierID: e.ActorCarrierID, ActorName: e.ActorName, Addr: e.Addr, UserAgent: e.UserAgent,
		Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID, Before: e.Before, After: e.After,
		Result: e.Result, Error: e.Error,
	}
	if chain.Event != nil {
		p.Event = chain.Event(e)
	}
	return p
}

// AuditHeadGet returns the chain's head.
func (db *DB) AuditHeadGet(ctx context.Context) (AuditHead, error) {
	h, err := db.q.AuditHeadGet(ctx)
	return AuditHead(h), unavailable(err)
}

// AuditFilter selects audit entries; zero fields select any.
type AuditFilter struct {
	Since, Until time.Time // at in [Since, Until)
	// Actor is an actor's name or kind.
	Actor string
	// Action is an action, or a prefix of actions ending with a dot
	// ("endpoint.").
	Action     string
	TargetType string
	TargetID   string
}

// AuditList returns up to limit entries matching f with ids above afterID,
// in chain order.
func (db *DB) AuditList(ctx context.Context, f AuditFilter, afterID int64, limit int) ([]AuditEntry, error) {
	rows, err := db.q.AuditList(ctx, dbsqlc.AuditListParams{
		AfterID: afterID, Since: optTime(f.Since), Until: optTime(f.Until), Actor: optText(f.Actor),
		Action: optText(f.Action), TargetType: optText(f.TargetType), TargetID: optText(f.TargetID),
		MaxRows: int32(limit),
	})
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = AuditEntry(r)
	}
	return out, nil
}

// AuditListDesc returns up to limit entries matching f with ids below
// beforeID (0: from the newest), newest first.
func (db *DB) AuditListDesc(ctx context.Context, f AuditFilter, beforeID int64, limit int) ([]AuditEntry, error) {
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	rows, err := db.q.AuditListDesc(ctx, dbsqlc.AuditListDescParams{
		BeforeID: beforeID, Since: optTime(f.Since), Until: optTime(f.Until), Actor: optText(f.Actor),
		Action: optText(f.Action), TargetType: optText(f.TargetType), TargetID: optText(f.TargetID),
		MaxRows: int32(limit),
	})
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = AuditEntry(r)
	}
	return out, nil
}

// AuditEnsurePartitions makes the audit_log day tables of from's day and
// the days after it that are missing, and returns how many it made.
func (db *DB) AuditEnsurePartitions(ctx context.Context, from time.Time, days int) (int, error) {
	n, err := db.q.AuditPartitionsEnsure(ctx, dbsqlc.AuditPartitionsEnsureParams{FromDay: from.UTC().Truncate(24 * time.Hour), Days: int32(days)})
	return int(n), unavailable(err)
}

// AuditPruned is what a retention drop of the audit log took: the day
// tables, and the last entry in them (0 when they held none), now the
// chain's anchor.
type AuditPruned struct {
	Dropped     []string
	ThroughID   int64
	ThroughHash []byte
}

// AuditPrune drops the audit_log day tables whose whole day is before
// before, in one transaction that holds the chain's head: the last entry
// they held becomes the anchor, and the entry record returns (an
// audit.pruned entry naming it) is appended behind the head. Day tables
// without entries go without an anchor change or an entry.
func (db *DB) AuditPrune(ctx context.Context, before time.Time, record func(AuditPruned) AuditEntry, chain AuditChain) (AuditPruned, error) {
	var out AuditPruned
	err := db.inTx(ctx, func(q *dbsqlc.Queries, tx pgx.Tx) error {
		out = AuditPruned{}
		h, err := q.AuditHeadLock(ctx)
		if err != nil {
			return unavailable(err)
		}
		parts, err := q.AuditPartitionList(ctx)
		if err != nil {
			return unavailable(err)
		}
		var end time.Time // the end of the last day dropped
		for _, p := range parts {
			if p.Day.AddDate(0, 0, 1).After(before) {
				break
			}
			out.Dropped = append(out.Dropped, p.Name)
			end = p.Day.AddDate(0, 0, 1)
		}
		if len(out.Dropped) == 0 {
			return nil
		}
		if out.ThroughID, err = q.AuditLastBefore(ctx, end); err != nil {
			return unavailable(err)
		}
		if out.ThroughID > 0 {
			if out.ThroughHash, err = q.AuditHashOf(ctx, out.ThroughID); err != nil {
				return unavailable(err)
			}
		}
		for _, name := range out.Dropped {
			if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{name}.Sanitize()); err != nil {
				return unavailable(err)
			}
		}
		if out.ThroughID <= h.AnchorID {
			out.ThroughID, out.ThroughHash = 0, nil
			return nil
		}
		if err := q.AuditAnchorSet(ctx, dbsqlc.AuditAnchorSetParams{AnchorID: out.ThroughID, AnchorHash: out.ThroughHash}); err != nil {
			return unavailable(err)
		}
		e := record(out)
		return unavailable(q.AuditAppend(ctx, auditAppendParams(&e, chain)))
	})
	return out, err
}
