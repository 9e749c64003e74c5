package ops

import (
	"context"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// Auditor records the actions in the audit log (*audit.Log).
type Auditor interface {
	Record(ctx context.Context, e audit.Entry) error
}

// Target types of the audit entries the actions write.
const (
	targetCarrier     = "carrier"
	targetMerchant    = "merchant"
	targetEndpoint    = "endpoint"
	targetDelivery    = "delivery"
	targetDeadLetters = "dead_letters"
	targetReplay      = "replay"
	targetOpsEndpoint = "ops_endpoint"
	targetSession     = "session"
	targetMessage     = "message"
	targetSettings    = "settings"
	targetEventType   = "event_type"
	targetUser        = "user"
	targetToken       = "token"
)

// record writes e, an action that ended with err, to the audit log and
// returns err; when the action succeeded but its entry could not be
// written, the audit log's error (hookrelay.EUNAVAILABLE): no action is
// answered "done" unrecorded. With no Config.Audit it returns err.
func (s *Service) record(ctx context.Context, e audit.Entry, err error) error {
	if s.cfg.Audit == nil {
		return err
	}
	if err != nil {
		e.After = nil // the zero result of a failed action says nothing
	}
	if aerr := s.cfg.Audit.Record(ctx, e.Result(err)); err == nil {
		return aerr
	}
	return err
}

// unit starts the unit of work of a change: the change's statements and
// its audit entry commit in one transaction (db.BeginUnit), the entry sent
// with the COMMIT, so it costs no commit or round trip of its own and a
// change whose entry cannot be written is undone. The action passes its entry and its error to the returned
// function, which ends the unit and returns the action's error, or the
// audit log's or the commit's; a failed action is rolled back and recorded
// apart (record). Without Config.Audit nothing is recorded.
func (s *Service) unit(ctx context.Context) (context.Context, func(audit.Entry, error) error) {
	if s.cfg.Audit == nil {
		return ctx, func(_ audit.Entry, err error) error { return err }
	}
	uctx, u, err := s.db.BeginUnit(ctx)
	if err != nil {
		// The action runs as it is and fails the same way; recorded apart.
		return ctx, func(e audit.Entry, aerr error) error { return s.record(ctx, e, aerr) }
	}
	return uctx, func(e audit.Entry, err error) error {
		if err != nil {
			u.Rollback(ctx)
			return s.record(ctx, e, err)
		}
		if err := s.cfg.Audit.Record(uctx, e); err != nil {
			u.Rollback(ctx)
			return err
		}
		if err := u.Commit(ctx); err != nil {
			return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the change could not be committed with its audit log entry", err)
		}
		return nil
	}
}

// Record writes e to the audit log (nothing with no Config.Audit): for the
// actions outside this package, such as the dashboard's logins.
func (s *Service) Record(ctx context.Context, e audit.Entry) error {
	if s.cfg.Audit == nil {
		return nil
	}
	return s.cfg.Audit.Record(ctx, e)
}

// MaxAuditLimit bounds the entries of one read of the audit log.
const MaxAuditLimit = 1000

// AuditEntriesNewest returns up to limit audit entries matching f with ids
// below beforeID (0: from the newest), newest first (the dashboard's
// pages). Admins only.
func (s *Service) AuditEntriesNewest(ctx context.Context, f db.AuditFilter, beforeID int64, limit int) ([]db.AuditEntry, error) {
	if limit < 1 || limit > MaxAuditLimit {
		return nil, invalidf("limit must be between 1 and %d", MaxAuditLimit)
	}
	return s.db.AuditListDesc(ctx, f, beforeID, limit)
}

// auditExportPage is how many entries one read of ExportAudit takes.
const auditExportPage = 500

// MaxAuditExport bounds the entries of one export.
const MaxAuditExport = 100_000

// ExportAudit passes up to limit audit entries matching f with ids above
// afterID, in chain order, to each, one read of the log at a time; each's
// error stops it. The export is recorded first (audit_log.export, with its
// filters). Admins only.
func (s *Service) ExportAudit(ctx context.Context, f db.AuditFilter, afterID int64, limit int, each func(db.AuditEntry) error) error {
	if limit < 1 || limit > MaxAuditExport {
		return invalidf("limit must be between 1 and %d", MaxAuditExport)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return invalidf("since is after until")
	}
	for _, p := range []struct{ name, v string }{{"actor", f.Actor}, {"action", f.Action}, {"target_type", f.TargetType}, {"target_id", f.TargetID}} {
		if err := hookrelay.CheckText(p.name, p.v, audit.MaxText); err != nil {
			return err
		}
	}
	if err := s.record(ctx, audit.Entry{Action: "audit_log.export", TargetType: "audit_log",
		After: map[string]any{"filter": f, "after_id": afterID, "limit": limit}}, nil); err != nil {
		return err
	}
	for limit > 0 {
		es, err := s.db.AuditList(ctx, f, afterID, min(limit, auditExportPage))
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := each(e); err != nil {
				return err
			}
		}
		if len(es) < min(limit, auditExportPage) {
			return nil
		}
		limit -= len(es)
		afterID = es[len(es)-1].ID
	}
	return nil
}
