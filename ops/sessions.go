package ops

import (
	"context"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// The credential and session actions are the operator's: no merchant takes
// them.

// SetAdminToken makes token the admin token and ends the dashboard sessions
// opened with any other one. It returns how many sessions it ended.
func (s *Service) SetAdminToken(ctx context.Context, token string) (int64, error) {
	ctx, done := s.unit(ctx)
	n, err := s.db.AdminTokenSet(ctx, hookrelay.HashKey(token), s.now())
	return n, done(audit.Entry{Action: "settings.admin_token", TargetType: targetSettings, TargetID: "admin_token",
		After: map[string]any{"sessions_ended": n}}, err)
}

// Sessions returns up to limit live dashboard sessions, newest first, with
// ids below beforeID (0: from the newest).
func (s *Service) Sessions(ctx context.Context, beforeID int64, limit int) ([]db.LoginSessionRecord, error) {
	return s.db.LoginSessionList(ctx, s.now(), beforeID, limit)
}

// RevokeSession ends dashboard session id at once; an unknown or expired
// session is hookrelay.ENOTFOUND (ending one already ended is not an error).
func (s *Service) RevokeSession(ctx context.Context, id int64) (err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "session.revoke", TargetType: targetSession, TargetID: audit.ID(id)}, err)
	}()
	ok, err := s.db.LoginSessionRevoke(ctx, id, s.now())
	if err != nil {
		return err
	}
	if !ok {
		return hookrelay.Errorf(hookrelay.ENOTFOUND, "session not found")
	}
	return nil
}
