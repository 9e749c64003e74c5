package ops

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/mail"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// InvitePath is where an invitation opens, on the dashboard's address; the
// token follows in the query parameter "token".
const InvitePath = "/ui/invite"

// InviteTTL is how long an invitation link works.
const InviteTTL = 72 * time.Hour

// MaxUserName bounds a user's and a token's name.
const MaxUserName = 200

var errOwnersOnly = hookrelay.Errorf(hookrelay.EFORBIDDEN, "only an owner manages users")

func ownerOnly(by access.Principal) error {
	if !by.Role.Allows(access.Owner) {
		return errOwnersOnly
	}
	return nil
}

// Users returns up to limit users with ids above afterID. Owners only.
func (s *Service) Users(ctx context.Context, by access.Principal, afterID int64, limit int) ([]db.User, error) {
	if err := ownerOnly(by); err != nil {
		return nil, err
	}
	return s.db.UserList(ctx, afterID, limit)
}

// InviteInput is an invitation to make.
type InviteInput struct {
	Email string
	Role  access.Role
	Scope access.Scope
}

// Invite is an invitation's token (shown once; only its hash is kept) and
// when it stops working.
type Invite struct {
	Token     string
	ExpiresAt time.Time
}

// NormalizeEmail checks an email address and returns its address part.
func NormalizeEmail(email string) (string, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(email))
	if err != nil || len(a.Address) > 320 {
		return "", hookrelay.Errorf(hookrelay.EINVALID, "email must be an email address")
	}
	return a.Address, nil
}

// InviteUser makes a single-use invitation link for a new user with a role
// and scope, valid for InviteTTL. Owners only; an email of an existing user
// is hookrelay.ECONFLICT.
func (s *Service) InviteUser(ctx context.Context, by access.Principal, in InviteInput) (inv Invite, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "user.invite", TargetType: targetUser, TargetID: in.Email,
			After: map[string]any{"email": in.Email, "role": in.Role.String(), "scope": in.Scope, "expires_at": inv.ExpiresAt}}, err)
	}()
	if err := ownerOnly(by); err != nil {
		return Invite{}, err
	}
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return Invite{}, err
	}
	if in.Role == access.RoleNone {
		return Invite{}, hookrelay.Errorf(hookrelay.EINVALID, "role must be one of viewer, support, operator, admin, owner")
	}
	if _, err := s.db.UserByEmail(ctx, email); err == nil {
		return Invite{}, hookrelay.Errorf(hookrelay.ECONFLICT, "a user with the email %q exists", email)
	} else if hookrelay.CodeOf(err) != hookrelay.ENOTFOUND {
		return Invite{}, err
	}
	token := randomToken()
	now := s.now()
	exp := now.Add(InviteTTL).UTC().Truncate(time.Second)
	if _, err := s.db.UserInviteCreate(ctx, db.NewUserInvite{TokenSHA256: PortalTokenHash(token), Email: email,
		Role: in.Role, Scope: in.Scope, Now: now, ExpiresAt: exp}); err != nil {
		return Invite{}, err
	}
	return Invite{Token: token, ExpiresAt: exp}, nil
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// UserPatch changes a user; nil fields stay.
type UserPatch struct {
	Role  *access.Role
	Scope *access.Scope
	Name  *string
}

// UpdateUser changes user id's role, scope or name; the change takes effect
// at the user's next request. Owners only; an owner cannot lower their own
// role (another owner or the break-glass token can).
func (s *Service) UpdateUser(ctx context.Context, by access.Principal, id int64, p UserPatch) (after db.User, err error) {
	var before *db.User
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "user.update", TargetType: targetUser, TargetID: audit.ID(id), Before: before, After: after}, err)
	}()
	if err := ownerOnly(by); err != nil {
		return db.User{}, err
	}
	u, err := s.db.UserGet(ctx, id)
	if err != nil {
		return db.User{}, err
	}
	prev := u
	before = &prev
	if p.Role != nil {
		if *p.Role == access.RoleNone {
			return db.User{}, hookrelay.Errorf(hookrelay.EINVALID, "role must be one of viewer, support, operator, admin, owner")
		}
		if by.UserID == id && *p.Role != u.Role {
			return db.User{}, hookrelay.Errorf(hookrelay.EFORBIDDEN, "you cannot change your own role")
		}
		u.Role = *p.Role
	}
	if p.Scope != nil {
		u.Scope = *p.Scope
	}
	if p.Name != nil {
		if err := hookrelay.CheckText("name", *p.Name, MaxUserName); err != nil {
			return db.User{}, err
		}
		u.Name = strings.TrimSpace(*p.Name)
	}
	return s.db.UserUpdate(ctx, u)
}

// DeactivateUser deactivates user id: its sessions and tokens end at once.
// Owners only, and not themselves.
func (s *Service) DeactivateUser(ctx context.Context, by access.Principal, id int64) (after db.User, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "user.deactivate", TargetType: targetUser, TargetID: audit.ID(id), After: after}, err)
	}()
	if err := ownerOnly(by); err != nil {
		return db.User{}, err
	}
	if by.UserID == id {
		return db.User{}, hookrelay.Errorf(hookrelay.EFORBIDDEN, "you cannot deactivate yourself")
	}
	return s.db.UserDeactivate(ctx, id, s.now())
}

// ReactivateUser lets user id sign in again. Owners only.
func (s *Service) ReactivateUser(ctx context.Context, by access.Principal, id int64) (after db.User, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "user.reactivate", TargetType: targetUser, TargetID: audit.ID(id), After: after}, err)
	}()
	if err := ownerOnly(by); err != nil {
		return db.User{}, err
	}
	return s.db.UserReactivate(ctx, id)
}
