package ops

import (
	"context"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// MaxTokenTTL bounds the life of an API token with an expiry.
const MaxTokenTTL = 2 * 366 * 24 * time.Hour

// TokenInput is an API token to create.
type TokenInput struct {
	Name  string
	Role  access.Role
	Scope access.Scope
	// ExpiresAt is when the token stops working (nil: never).
	ExpiresAt *time.Time
	// Service makes a token of no user (owners only); otherwise the token
	// is by's user's.
	Service bool
}

// NewToken is a token created: shown once, only its hash is kept.
type NewToken struct {
	db.APIToken
	Token string
}

// CreateToken creates an API token. A user's token is its creator's (a
// user's session or one of the user's tokens), with a role no more than
// theirs and a scope within theirs (theirs when none is given); a service
// token is an owner's to create. A token cannot make a token with more
// power than it has.
func (s *Service) CreateToken(ctx context.Context, by access.Principal, in TokenInput) (out NewToken, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "token.create", TargetType: targetToken, TargetID: audit.ID(out.ID), After: out}, err)
	}()
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" {
		return NewToken{}, hookrelay.Errorf(hookrelay.EINVALID, "name is required")
	}
	if err := hookrelay.CheckText("name", in.Name, MaxUserName); err != nil {
		return NewToken{}, err
	}
	if in.Role == access.RoleNone {
		return NewToken{}, hookrelay.Errorf(hookrelay.EINVALID, "role must be one of viewer, support, operator, admin, owner")
	}
	if !by.Role.Allows(in.Role) {
		return NewToken{}, hookrelay.Errorf(hookrelay.EFORBIDDEN, "a token's role cannot be above yours (%s)", by.Role)
	}
	if in.Scope.Empty() {
		in.Scope = by.Scope
	}
	if !in.Scope.Within(by.Scope) {
		return NewToken{}, hookrelay.Errorf(hookrelay.EFORBIDDEN, "a token's scope cannot be wider than yours")
	}
	now := s.now()
	if in.ExpiresAt != nil && (!in.ExpiresAt.After(now) || in.ExpiresAt.Sub(now) > MaxTokenTTL) {
		return NewToken{}, hookrelay.Errorf(hookrelay.EINVALID, "expiry must be in the future and within two years")
	}
	var userID int64
	switch {
	case in.Service:
		if !by.Role.Allows(access.Owner) {
			return NewToken{}, hookrelay.Errorf(hookrelay.EFORBIDDEN, "only an owner creates service tokens")
		}
	case by.UserID != 0:
		userID = by.UserID
	default:
		return NewToken{}, hookrelay.Errorf(hookrelay.EINVALID, "you are not a user: create a service token (\"service\": true)")
	}
	token := hookrelay.NewKey(hookrelay.APITokenPrefix)
	t, err := s.db.APITokenCreate(ctx, db.NewAPIToken{TokenSHA256: hookrelay.HashKey(token),
		Prefix: hookrelay.KeyDisplayPrefix(token), Name: in.Name, UserID: userID, Role: in.Role, Scope: in.Scope,
		Now: now, ExpiresAt: in.ExpiresAt})
	if err != nil {
		return NewToken{}, err
	}
	return NewToken{APIToken: t, Token: token}, nil
}

// Tokens returns up to limit live tokens with ids above afterID: an owner
// sees every token, anyone else their user's.
func (s *Service) Tokens(ctx context.Context, by access.Principal, afterID int64, limit int) ([]db.APIToken, error) {
	if by.Role.Allows(access.Owner) {
		return s.db.APITokenList(ctx, 0, afterID, limit)
	}
	if by.UserID == 0 || by.Role == access.RoleNone {
		return nil, nil
	}
	return s.db.APITokenList(ctx, by.UserID, afterID, limit)
}

// RevokeToken revokes token id at once: an owner any token, anyone else
// their user's.
func (s *Service) RevokeToken(ctx context.Context, by access.Principal, id int64) (err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "token.revoke", TargetType: targetToken, TargetID: audit.ID(id)}, err)
	}()
	t, err := s.db.APITokenGet(ctx, id)
	if err != nil {
		return err
	}
	if !by.Role.Allows(access.Owner) && (by.UserID == 0 || t.UserID != by.UserID || by.Role == access.RoleNone) {
		return hookrelay.Errorf(hookrelay.ENOTFOUND, "API token not found")
	}
	_, err = s.db.APITokenRevoke(ctx, id, s.now())
	return err
}
