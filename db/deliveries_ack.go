package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// AckKind says what a delivery result does to its row.
type AckKind string

// Ack kinds.
const (
	AckSuccess AckKind = "success" // delete the row, record the attempt, promote the successor
	AckDead    AckKind = "dead"    // move to dead_letters, record the attempt, promote the successor
	AckRetry   AckKind = "retry"   // reschedule after Delay, record the attempt
	AckRelease AckKind = "release" // give the row back at once; nothing recorded
)

// DeliveryResult is one finished (or abandoned) delivery attempt.
type DeliveryResult struct {
	ID         int64
	LeaseToken int64
	EndpointID int64
	Kind       AckKind
	// Spend reports whether a retry uses up an attempt (false: 410 hold,
	// payload store down).
	Spend bool
	// Delay is how long a retried row stays invisible.
	Delay time.Duration
	// Outcome is the delivery_attempts outcome: success, failed, timeout,
	// conn_error, gone, throttled, refused.
	Outcome     string
	Status      int
	Latency     time.Duration
	Error       string
	Excerpt     string
	AttemptedAt time.Time
	// The row's chain as claimed (ResultFor sets them): with the chain of
	// every result known, an acknowledgement without dead letters promotes
	// the successors in the same round trip (see DeliveryAckBatch). Chain
	// is the row's chain value (ClaimedDelivery.Chain).
	Chain      string
	Ordered    bool
	ChainKnown bool
}

// ResultFor starts the result of a claimed delivery: its row, lease and
// chain.
func ResultFor(c ClaimedDelivery) DeliveryResult {
	return DeliveryResult{ID: c.ID, LeaseToken: c.LeaseToken, EndpointID: c.EndpointID,
		Chain: c.Chain, Ordered: c.Ordered, ChainKnown: true}
}

// EndpointOutcome is one endpoint's share of an ack batch, in the form
// endpoint_health needs.
type EndpointOutcome struct {
	EndpointID int64
	Successes  int
	Failures   int    // failures that count for the circuit
	Trailing   int    // failures after the last success (all when none)
	Gone       bool   // some attempt was answered 410
	LastError  string // last failure's error, "" for none
}

// HealthPolicy is the circuit breaker and auto-disable policy applied by
// DeliveryAckBatch.
type HealthPolicy struct {
	Threshold    int           // consecutive failures that open the circuit
	BaseBackoff  time.Duration // first open period
	MaxBackoff   time.Duration // cap of the doubling
	DisableAfter time.Duration // failing this long disables the endpoint
}

// AckReport says what an ack batch changed.
type AckReport struct {
	Applied  int     // results whose lease token still matched
	Stale    int     // results ignored: the row was re-leased or is gone
	Promoted int64   // parked successors made visible
	Disabled []int64 // endpoints disabled by this batch (410 or failing too long)
	Opened   []int64 // endpoints whose circuit is now open or half-open
	Closed   []int64 // endpoints whose circuit is now closed
	// HealthSkipped are outcomes not applied because another session held
	// their endpoint_health row; carry them over to a later batch.
	HealthSkipped []EndpointOutcome
}

// DeliveryAckBatch applies results and endpoint outcomes in one transaction
// (synchronous_commit off: a lost ack only causes a redelivery): rows are
// deleted, rescheduled or dead-lettered (fenced by lease token), attempts
// appended, successors promoted and endpoint health folded in. Health rows
// another session holds are skipped rather than waited for (a dispatcher
// stalled inside this transaction must not stop the others); their outcomes
// come back in AckReport.HealthSkipped for the caller to carry over.
// Dead letters and health transitions (a circuit opened or closed, an
// endpoint disabled) add their operational webhook events to the outbox
// (ops_events) in the same transaction; a batch without any adds nothing.
//
// A batch without dead letters whose results all know their chain
// (ResultFor) takes one round trip: the statements go as one pipeline,
// which PostgreSQL runs as one implicit transaction (ackPipelined). Other
// batches take BEGIN, the statements one by one and COMMIT, because the
// dead letters and the successors to promote are read from what the
// acknowledgement deleted.
func (db *DB) DeliveryAckBatch(ctx context.Context, dispatcherID int64, results []DeliveryResult,
	outcomes []EndpointOutcome, policy HealthPolicy) (AckReport, error) {
	var rep AckReport
	p := dbsqlc.DeliveryAckManyParams{DispatcherID: dispatcherID}
	var dead map[int64]DeliveryResult // the batch's dead letters, nil for none (nearly every batch)
	chainsKnown := true
	for _, r := range results {
		if r.Kind == AckDead {
			if dead == nil {
				dead = make(map[int64]DeliveryResult)
			}
			dead[r.ID] = r
		}
		chainsKnown = chainsKnown && r.ChainKnown
		p.IDs = append(p.IDs, r.ID)
		p.Tokens = append(p.Tokens, r.LeaseToken)
		p.Kinds = append(p.Kinds, string(r.Kind))
		p.Spend = append(p.Spend, r.Spend)
		p.DelaysMs = append(p.DelaysMs, r.Delay.Milliseconds())
		p.Outcomes = append(p.Outcomes, r.Outcome)
		p.Statuses = append(p.Statuses, int32(r.Status))
		p.LatenciesMs = append(p.LatenciesMs, int32(r.Latency.Milliseconds()))
		p.Errors = append(p.Errors, r.Error)
		p.Excerpts = append(p.Excerpts, r.Excerpt)
		at := r.AttemptedAt
		if at.IsZero() {
			at = time.Now()
		}
		p.AttemptedAt = append(p.AttemptedAt, at)
	}
	conn, err := db.ackConns.get(ctx)
	if err != nil {
		return rep, fmt.Errorf("ack deliveries: %w", unavailable(err))
	}
	defer func() { db.ackConns.put(conn, err) }()
	hp := healthParams(outcomes, policy)
	if hp != nil {
		// Outside the transaction: once the rows exist it waits for nobody.
		if err = dbsqlc.New(conn.conn).EndpointHealthEnsure(ctx, hp.EndpointIDs); err != nil {
			return rep, fmt.Errorf("endpoint health: %w", unavailable(err))
		}
	}
	if dead == nil && chainsKnown {
		rep, err = db.ackPipelined(ctx, conn.conn, p, results, hp, outcomes)
		return rep, err
	}
	err = runTx(ctx, conn.conn, func(q *dbsqlc.Queries, tx pgx.Tx) error {
		// Both settings last until the commit; one round trip.
		if _, err := tx.Exec(ctx, ackSettingsSQL, ms(db.cfg.AckIdleTimeout)); err != nil {
			return unavailable(err)
		}
		rep = AckReport{}
		var promote dbsqlc.DeliveryPromoteParams
		if len(results) > 0 {
			rows, err := q.DeliveryAckMany(ctx, p)
			if err != nil {
				return fmt.Errorf("ack deliveries: %w", unavailable(err))
			}
			if db.hooks.ackStall != nil {
				db.hooks.ackStall()
			}
			rep.Applied = len(rows)
			rep.Stale = len(results) - len(rows)
			var dl dbsqlc.DeadLetterInsertParams
			for _, r := range rows {
				if r.Deleted && r.Ordered {
					promote.EndpointIDs = append(promote.EndpointIDs, r.EndpointID)
					promote.Chains = append(promote.Chains, r.OrderingKey)
					promote.IDs = append(promote.IDs, r.ID)
				}
				if res, ok := dead[r.ID]; ok && r.Deleted {
					dl.IDs = append(dl.IDs, r.ID)
					dl.MessageIDs = append(dl.MessageIDs, r.MessageID)
					dl.MessageReceivedAts = append(dl.MessageReceivedAts, r.MessageReceivedAt)
					dl.EndpointIDs = append(dl.EndpointIDs, r.EndpointID)
					dl.Queues = append(dl.Queues, r.Queue)
					// A dead letter keeps the key, not the chain: retried,
					// it goes back unordered under its key.
					key, _ := hookrelay.ChainKey(r.OrderingKey)
					dl.OrderingKeys = append(dl.OrderingKeys, key)
					dl.Attempts = append(dl.Attempts, r.Attempt)
					dl.Statuses = append(dl.Statuses, int32(res.Status))
					dl.Errors = append(dl.Errors, res.Error)
				}
			}
			if len(dl.IDs) > 0 {
				if err := q.DeadLetterInsert(ctx, dl); err != nil {
					return fmt.Errorf("write dead letters: %w", unavailable(err))
				}
				if err := q.OpsEventDeadLettered(ctx, dbsqlc.OpsEventDeadLetteredParams{
					EndpointIDs: dl.EndpointIDs, Errors: dl.Errors}); err != nil {
					return fmt.Errorf("report dead letters: %w", unavailable(err))
				}
			}
		}
		if len(promote.IDs) > 0 {
			n, err := q.DeliveryPromote(ctx, promote)
			if err != nil {
				return fmt.Errorf("promote successors: %w", unavailable(err))
			}
			rep.Promoted = n
		}
		if hp == nil {
			return nil
		}
		rows, err := q.EndpointHealthApply(ctx, *hp)
		if err != nil {
			return fmt.Errorf("endpoint health: %w", unavailable(err))
		}
		rep.foldHealth(rows, outcomes)
		return nil
	})
	return rep, err
}

// ackSettingsSQL gives an acknowledgement's transaction its settings, which
// last until its commit: no wait for the WAL flush, and its own idle limit.
const ackSettingsSQL = `SELECT set_config('synchronous_commit', 'off', true),
	set_config('idle_in_transaction_session_timeout', $1, true)`

// ackPipelined is DeliveryAckBatch for a batch without dead letters whose
// chains are known: the settings, the acknowledgement, the promotion of the
// successors of its ordered successes and the health outcomes go in one
// pipeline, one round trip and one implicit transaction, instead of five or
// six round trips (BEGIN, settings, ack, promote, health, COMMIT).
//
// The successors are those of the results sent as successes, not of the rows
// the acknowledgement deleted: the promotion cannot wait for the
// acknowledgement's answer. It is still a statement of its own, after it, so
// it sees the rows parked by any claim the acknowledgement's DELETE waited
// for (the reason it was never a part of DeliveryAckMany). A success that turned
// out stale (its lease was over and the row is another dispatcher's) may
// thus make the next row of its chain visible while the row is still there;
// that only wakes it: a claim parks again any row whose predecessor is there.
func (db *DB) ackPipelined(ctx context.Context, conn interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, p dbsqlc.DeliveryAckManyParams, results []DeliveryResult, hp *dbsqlc.EndpointHealthApplyParams,
	outcomes []EndpointOutcome) (AckReport, error) {
	var promote dbsqlc.DeliveryPromoteParams
	for _, r := range results {
		if r.Kind == AckSuccess && r.Ordered {
			promote.EndpointIDs = append(promote.EndpointIDs, r.EndpointID)
			promote.Chains = append(promote.Chains, r.Chain)
			promote.IDs = append(promote.IDs, r.ID)
		}
	}
	var (
		acked    []dbsqlc.DeliveryAckManyRow
		promoted int64
		health   []dbsqlc.EndpointHealthApplyRow
	)
	steps := []step{func(tx dbsqlc.DBTX) error {
		_, err := tx.Exec(ctx, ackSettingsSQL, ms(db.cfg.AckIdleTimeout))
		return err
	}}
	if len(results) > 0 {
		steps = append(steps, func(tx dbsqlc.DBTX) (err error) {
			acked, err = dbsqlc.New(tx).DeliveryAckMany(ctx, p)
			return err
		})
	}
	if len(promote.IDs) > 0 {
		steps = append(steps, func(tx dbsqlc.DBTX) (err error) {
			promoted, err = dbsqlc.New(tx).DeliveryPromote(ctx, promote)
			return err
		})
	}
	if hp != nil {
		steps = append(steps, func(tx dbsqlc.DBTX) (err error) {
			health, err = dbsqlc.New(tx).EndpointHealthApply(ctx, *hp)
			return err
		})
	}
	if err := runPipeline(ctx, conn, steps...); err != nil {
		return AckReport{}, fmt.Errorf("ack deliveries: %w", unavailable(err))
	}
	rep := AckReport{Applied: len(acked), Stale: len(results) - len(acked), Promoted: promoted}
	if hp != nil {
		rep.foldHealth(health, outcomes)
	}
	return rep, nil
}

// healthParams returns the EndpointHealthApply arguments for outcomes, nil
// for none.
func healthParams(outcomes []EndpointOutcome, policy HealthPolicy) *dbsqlc.EndpointHealthApplyParams {
	if len(outcomes) == 0 {
		return nil
	}
	hp := &dbsqlc.EndpointHealthApplyParams{
		Threshold:     int32(policy.Threshold),
		BaseBackoffMs: policy.BaseBackoff.Milliseconds(),
		MaxBackoffMs:  policy.MaxBackoff.Milliseconds(),
		DisableAfter:  policy.DisableAfter,
	}
	for _, o := range outcomes {
		hp.EndpointIDs = append(hp.EndpointIDs, o.EndpointID)
		hp.Successes = append(hp.Successes, int32(o.Successes))
		hp.Failures = append(hp.Failures, int32(o.Failures))
		hp.Trail = append(hp.Trail, int32(o.Trailing))
		hp.Gone = append(hp.Gone, o.Gone)
		hp.LastErrors = append(hp.LastErrors, o.LastError)
	}
	return hp
}

// foldHealth records the applied health rows in the report, and the outcomes
// whose rows were skipped (locked by another session) in HealthSkipped.
func (rep *AckReport) foldHealth(rows []dbsqlc.EndpointHealthApplyRow, outcomes []EndpointOutcome) {
	applied := make(map[int64]bool, len(rows))
	for _, r := range rows {
		applied[r.EndpointID] = true
		if r.Disabled {
			rep.Disabled = append(rep.Disabled, r.EndpointID)
		}
		if r.CircuitState == "closed" {
			rep.Closed = append(rep.Closed, r.EndpointID)
		} else {
			rep.Opened = append(rep.Opened, r.EndpointID)
		}
	}
	for _, o := range outcomes {
		if !applied[o.EndpointID] {
			rep.HealthSkipped = append(rep.HealthSkipped, o)
		}
	}
}
