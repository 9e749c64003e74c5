package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/storage"
)

// RetentionReport is the outcome of one retention pass.
type RetentionReport struct {
	At      time.Time // the clock's time the pass ran for
	Created int       // partitions created ahead
	// Dropped names the day tables detached and dropped.
	Dropped []string
	// Blocked names the messages partitions past retention that pending
	// deliveries still reference; their drop is postponed.
	Blocked []string
	// Vacuumed names the closed days' tables vacuumed (and frozen).
	Vacuumed []string
	// DeadLettersDiscarded counts dead letters whose message passed retention.
	DeadLettersDiscarded int64
	// PullExpired counts the deliveries of poll endpoints that were not
	// acknowledged within retention and became dead letters.
	PullExpired int64
	// PayloadObjectsDeleted counts S3 objects deleted with their days.
	PayloadObjectsDeleted int
	// SessionsDeleted counts the expired dashboard sessions deleted.
	SessionsDeleted int64
	Took            time.Duration // set by the caller
	Err             error         // set for OnRetention only
}

// CarrierStatsRetention is how long the carriers' per-minute statistics
// are kept.
const CarrierStatsRetention = 24 * time.Hour

const (
	retentionJob    = "retention"
	payloadPurgeJob = "payload_purge/" // + YYYY-MM-DD: a dropped day whose S3 prefix is not deleted yet
	dayLayout       = "2006-01-02"
)

// retain runs one pass at now: partitions ahead, interrupted work of earlier
// passes, then every day table past retention. Steps that fail are reported
// in the joined error and retried by the next pass; the others go on.
func (mt *Maintainer) retain(ctx context.Context, sess *db.Session, now time.Time) (RetentionReport, error) {
	rep := RetentionReport{At: now}
	created, err := mt.db.EnsurePartitions(ctx, now, mt.cfg.PartitionsAhead)
	if err != nil {
		return rep, err
	}
	rep.Created = created
	mt.m.partitionsCreated.Add(float64(created))

	var errs []error
	parts, err := mt.db.Partitions(ctx)
	if err != nil {
		return rep, err
	}
	cutoff := now.Add(-mt.cfg.Retention)
	today := now.UTC().Truncate(24 * time.Hour)
	keepKeysFrom := today.AddDate(0, 0, 1-mt.cfg.IdempotencyDays)

	// Poll endpoints' deliveries not acknowledged within retention become
	// dead letters (a push delivery has its retries and then becomes one;
	// a pulled one has only this window). They are shown like any dead
	// letter until their message's day is dropped.
	if n, err := mt.db.DeliveryPullExpire(ctx, cutoff); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		rep.PullExpired = n
		mt.m.pullExpired.Add(float64(n))
		mt.logger.Warn("maintenance: poll endpoints' deliveries not acknowledged within retention became dead letters",
			"count", n, "received_before", cutoff)
	}

	// Dead letters of messages past retention go first: they would otherwise
	// pin their day for ever.
	var lastExpiredMessageDay time.Time
	for _, p := range parts {
		if p.Parent == "messages" && expired(p.Day, cutoff) {
			lastExpiredMessageDay = p.Day
		}
	}
	if !lastExpiredMessageDay.IsZero() {
		n, err := mt.db.DeadLettersDiscardBefore(ctx, lastExpiredMessageDay.AddDate(0, 0, 1))
		if err != nil {
			errs = append(errs, err)
		}
		rep.DeadLettersDiscarded = n
		mt.m.retentionDiscarded.Add(float64(n))
		if n > 0 {
			mt.logger.Warn("maintenance: discarded dead letters whose message passed retention",
				"count", n, "received_before", lastExpiredMessageDay.AddDate(0, 0, 1))
		}
	}

	dropped := map[string]bool{}
	for _, p := range parts {
		var drop bool
		switch {
		case !p.Attached || p.DetachPending:
			drop = true // an earlier pass was interrupted after deciding to drop it
		case p.Parent == "idempotency_keys":
			drop = p.Day.Before(keepKeysFrom)
		case p.Parent == "carrier_refusals":
			drop = expired(p.Day, now.Add(-mt.cfg.RefusalRetention))
		default:
			drop = expired(p.Day, cutoff)
		}
		if !drop {
			continue
		}
		if p.Parent == "messages" && p.Attached && !p.DetachPending {
			pending, err := mt.db.PendingDeliveriesBetween(ctx, p.Day, p.Day.AddDate(0, 0, 1))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if pending > 0 {
				rep.Blocked = append(rep.Blocked, p.Name)
				mt.logger.Warn("maintenance: partition past retention still referenced by pending deliveries; drop postponed",
					"partition", p.Name, "pending_deliveries", pending)
				continue
			}
		}
		if err := mt.dropPartition(ctx, sess, p, now); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Dropped = append(rep.Dropped, p.Name)
		dropped[p.Name] = true
		mt.m.retentionDropped.WithLabelValues(p.Parent).Inc()
	}
	mt.m.retentionBlocked.Set(float64(len(rep.Blocked)))

	if mt.cfg.Audit != nil {
		pr, err := mt.cfg.Audit.Prune(ctx, now, mt.cfg.AuditRetention)
		if err != nil {
			errs = append(errs, fmt.Errorf("prune the audit log: %w", err))
		}
		rep.Dropped = append(rep.Dropped, pr.Dropped...)
		if len(pr.Dropped) > 0 {
			mt.m.retentionDropped.WithLabelValues("audit_log").Add(float64(len(pr.Dropped)))
			mt.logger.Info("maintenance: dropped audit log days past retention", "partitions", pr.Dropped,
				"anchor_id", pr.ThroughID)
		}
	}

	n, err := mt.purgePayloads(ctx)
	rep.PayloadObjectsDeleted = n
	if err != nil {
		errs = append(errs, err)
	}
	// Rows of dispatchers stopped or silent for a day are history too.
	if _, err := mt.db.DispatchersPrune(ctx, 24*time.Hour); err != nil {
		errs = append(errs, err)
	}
	// Expired dashboard sessions: a small table of live logins, so a DELETE.
	if rep.SessionsDeleted, err = mt.db.LoginSessionsDeleteExpired(ctx, now); err != nil {
		errs = append(errs, err)
	}
	// Expired portal links, used or not: the same kind of small table.
	if _, err := mt.db.PortalLinksDeleteExpired(ctx, now); err != nil {
		errs = append(errs, err)
	}
	// Expired invitations to users, likewise.
	if _, err := mt.db.UserInvitesDeleteExpired(ctx, now); err != nil {
		errs = append(errs, err)
	}
	// The carriers' statistics of minutes older than a day (a small table:
	// active carriers x minutes).
	if _, err := mt.db.CarrierStatsTrim(ctx, now.Add(-CarrierStatsRetention)); err != nil {
		errs = append(errs, err)
	}

	// Last, as the longest: the closed days not yet vacuumed.
	for _, p := range parts {
		if dropped[p.Name] || !needsClosedDayVacuum(p, now) {
			continue
		}
		start := time.Now()
		if err := sess.VacuumFreeze(ctx, p.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Vacuumed = append(rep.Vacuumed, p.Name)
		mt.m.vacuums.WithLabelValues(p.Parent).Inc()
		mt.logger.Info("maintenance: vacuumed a closed day", "table", p.Name, "pages", p.HeapPages,
			"took", time.Since(start))
	}

	detail := fmt.Sprintf("created=%d dropped=%s blocked=%s vacuumed=%s dead_letters_discarded=%d pull_expired=%d payload_objects_deleted=%d",
		rep.Created, strings.Join(rep.Dropped, ","), strings.Join(rep.Blocked, ","), strings.Join(rep.Vacuumed, ","),
		rep.DeadLettersDiscarded, rep.PullExpired, n)
	if err := errors.Join(errs...); err != nil {
		return rep, err
	}
	if err := mt.db.MaintenanceRunSet(ctx, db.MaintenanceRun{Job: retentionJob, LastRunAt: now, Detail: detail}); err != nil {
		return rep, err
	}
	mt.m.retentionLastRun.Set(float64(now.Unix()))
	return rep, nil
}

// closedDayMargin is how long after its end a day counts as closed: a
// callback received a moment before midnight may be committed a moment after.
const closedDayMargin = 10 * time.Minute

// needsClosedDayVacuum says whether the retention pass at now vacuums p: an
// attached day table whose day closed at least closedDayMargin ago and whose
// heap has pages its last VACUUM did not find all-visible (none ran yet, or
// rows came after it). Autovacuum does not VACUUM the history for its
// inserts (migration 00090): on the open day each such VACUUM held the
// partition's lock for minutes and the stat sampler's BRIN summary waited.
// One VACUUM (FREEZE) of the closed day does that work once; a pass that
// finds it done (relallvisible = pages) skips the day, and a crash, which
// resets the statistics but not pg_class, does not bring it back.
func needsClosedDayVacuum(p db.Partition, now time.Time) bool {
	closed := !p.Day.AddDate(0, 0, 1).Add(closedDayMargin).After(now)
	return closed && p.Attached && !p.DetachPending && p.AllVisiblePages < p.HeapPages
}

// expired reports whether the whole day starting at day is older than cutoff.
func expired(day, cutoff time.Time) bool {
	return !day.AddDate(0, 0, 1).After(cutoff)
}

// dropPartition detaches p concurrently (writers of the parent never wait)
// and drops it. For a messages day it first records that the day's S3 prefix
// must go, so a crash between the drop and the purge is finished later.
func (mt *Maintainer) dropPartition(ctx context.Context, sess *db.Session, p db.Partition, now time.Time) error {
	if p.Parent == "messages" && mt.payloads != nil {
		job := payloadPurgeJob + p.Day.Format(dayLayout)
		if err := mt.db.MaintenanceRunSet(ctx, db.MaintenanceRun{Job: job, LastRunAt: now, Detail: storage.DayPrefix(p.Day)}); err != nil {
			return err
		}
	}
	switch {
	case p.DetachPending:
		if err := sess.FinalizeDetach(ctx, p.Parent, p.Name); err != nil {
			return err
		}
	case p.Attached:
		if err := sess.DetachPartition(ctx, p.Parent, p.Name); err != nil {
			return err
		}
	}
	return sess.DropTable(ctx, p.Name)
}

// purgePayloads deletes the S3 prefix of every dropped day still recorded as
// pending, and forgets the days it finished.
func (mt *Maintainer) purgePayloads(ctx context.Context) (int, error) {
	if mt.payloads == nil {
		return 0, nil
	}
	runs, err := mt.db.MaintenanceRuns(ctx, payloadPurgeJob)
	if err != nil {
		return 0, err
	}
	var errs []error
	total := 0
	left := len(runs)
	for _, r := range runs {
		day, err := time.Parse(dayLayout, strings.TrimPrefix(r.Job, payloadPurgeJob))
		if err != nil {
			errs = append(errs, fmt.Errorf("bad payload purge job %q: %w", r.Job, err))
			continue
		}
		n, err := mt.payloads.DeletePrefix(ctx, storage.DayPrefix(day))
		total += n
		mt.m.retentionObjects.Add(float64(n))
		if err != nil {
			errs = append(errs, fmt.Errorf("purge payloads of %s: %w", day.Format(dayLayout), err))
			continue
		}
		if err := mt.db.MaintenanceRunDelete(ctx, r.Job); err != nil {
			errs = append(errs, err)
			continue
		}
		left--
	}
	mt.m.pendingPayloadPurge.Set(float64(left))
	return total, errors.Join(errs...)
}
