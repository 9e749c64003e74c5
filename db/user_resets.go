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

// NewUserReset is a password reset link to record for an existing user.
type NewUserReset struct {
	TokenSHA256 []byte // SHA-256 of the link's random token
	User        User
	Now         time.Time
	ExpiresAt   time.Time
}

// UserResetCreate records a reset link for n.User and, in the same
// transaction, voids the user's earlier unused ones.
func (db *DB) UserResetCreate(ctx context.Context, n NewUserReset) error {
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		if _, err := q.UserResetVoid(ctx, &n.User.ID); err != nil {
			return unavailable(err)
		}
		_, err := q.UserResetInsert(ctx, dbsqlc.UserResetInsertParams{TokenSHA256: n.TokenSHA256, Email: n.User.Email,
			Role: n.User.Role.String(), Scope: scopeJSON(n.User.Scope), UserID: &n.User.ID, Now: n.Now, ExpiresAt: n.ExpiresAt})
		return unavailable(err)
	})
	if err != nil {
		return fmt.Errorf("insert reset link of user %d: %w", n.User.ID, err)
	}
	return nil
}

// UserResetGet returns the user of the unused, unexpired reset link of a
// token hash, or hookrelay.ENOTFOUND.
func (db *DB) UserResetGet(ctx context.Context, tokenSHA256 []byte, now time.Time) (User, error) {
	r, err := db.q.UserResetGet(ctx, dbsqlc.UserResetGetParams{TokenSHA256: tokenSHA256, Now: now})
	if err != nil {
		return User{}, notFound(unavailableUnlessNoRows(err), "reset link")
	}
	return db.UserGet(ctx, *r.UserID)
}

// UserCredentials are a user's new password and TOTP enrolment.
type UserCredentials struct {
	PasswordHash string // argon2id
	TOTPSecret   string // plaintext, stored sealed; "" removes TOTP
	// TOTPStep is the step of the enrolment code (0 without one): that code
	// does not sign in again.
	TOTPStep int64
	Now      time.Time
}

// UserResetAccept uses the reset link of a token hash, sets its user's
// password and TOTP secret and ends all the user's dashboard sessions, in
// one transaction; the user's API tokens stay. A link unknown, used or
// expired is hookrelay.ENOTFOUND; a user deactivated or turned to single
// sign-on meanwhile hookrelay.ECONFLICT.
func (db *DB) UserResetAccept(ctx context.Context, tokenSHA256 []byte, c UserCredentials) (User, error) {
	var u User
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		inv, err := q.UserResetUse(ctx, dbsqlc.UserResetUseParams{TokenSHA256: tokenSHA256, Now: c.Now})
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "reset link")
		}
		totp := ""
		if c.TOTPSecret != "" {
			if totp, err = db.seal(purposeTOTP, c.TOTPSecret); err != nil {
				return err
			}
		}
		r, err := q.UserSetCredentials(ctx, dbsqlc.UserSetCredentialsParams{ID: *inv.UserID, PasswordHash: c.PasswordHash,
			TotpSecret: totp, Step: c.TOTPStep})
		if errors.Is(err, pgx.ErrNoRows) {
			return hookrelay.Errorf(hookrelay.ECONFLICT, "this account is deactivated or signs in through single sign-on")
		}
		if err != nil {
			return unavailable(err)
		}
		if u, err = db.userFrom(r); err != nil {
			return err
		}
		_, err = q.DashboardSessionRevokeUser(ctx, dbsqlc.DashboardSessionRevokeUserParams{UserID: inv.UserID, Now: c.Now})
		return unavailable(err)
	})
	if err != nil {
		return User{}, fmt.Errorf("accept reset link: %w", err)
	}
	return u, nil
}
