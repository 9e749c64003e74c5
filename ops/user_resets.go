package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// ResetPath is where a password reset link opens, on the dashboard's
// address; the token follows in the query parameter "token".
const ResetPath = "/ui/reset"

// ResetUser makes a single-use link with which password user id sets a new
// password and TOTP enrolment, valid for InviteTTL; the user's earlier
// unused links stop working. Owners only (an owner may reset themselves).
// A deactivated user or a single sign-on user is hookrelay.ECONFLICT.
func (s *Service) ResetUser(ctx context.Context, by access.Principal, id int64) (inv Invite, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "user.reset", TargetType: targetUser, TargetID: audit.ID(id),
			After: map[string]any{"expires_at": inv.ExpiresAt}}, err)
	}()
	if err := ownerOnly(by); err != nil {
		return Invite{}, err
	}
	u, err := s.db.UserGet(ctx, id)
	if err != nil {
		return Invite{}, err
	}
	if !u.Active() {
		return Invite{}, hookrelay.Errorf(hookrelay.ECONFLICT, "user %d is deactivated: reactivate them first", id)
	}
	if u.AuthSource != db.AuthPassword {
		return Invite{}, hookrelay.Errorf(hookrelay.ECONFLICT, "user %d signs in through single sign-on: their password is their provider's", id)
	}
	token := randomToken()
	now := s.now()
	exp := now.Add(InviteTTL).UTC().Truncate(time.Second)
	if err := s.db.UserResetCreate(ctx, db.NewUserReset{TokenSHA256: PortalTokenHash(token), User: u, Now: now, ExpiresAt: exp}); err != nil {
		return Invite{}, err
	}
	return Invite{Token: token, ExpiresAt: exp}, nil
}
