package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// purposeTOTP binds a sealed TOTP secret to its column.
const purposeTOTP = "user_totp_secret"

// Auth sources of a user: who checks the user's identity.
const (
	AuthPassword = "password"
	AuthSSO      = "sso"
)

// SessionUser is the kind of a user's dashboard session.
const SessionUser = "user"

// User is an operator's account.
type User struct {
	ID    int64
	Email string
	Name  string
	Role  access.Role
	Scope access.Scope
	// PasswordHash is the argon2id hash ("" for a single sign-on user).
	PasswordHash string
	// TOTPSecret is the opened TOTP secret ("" when not enrolled).
	TOTPSecret    string
	AuthSource    string // AuthPassword or AuthSSO
	DeactivatedAt *time.Time
	LastLoginAt   *time.Time
	CreatedAt     time.Time
}

// Active reports whether the user may sign in.
func (u User) Active() bool { return u.DeactivatedAt == nil }

func scopeJSON(s access.Scope) []byte {
	b, _ := json.Marshal(s) // two int slices: never fails
	return b
}

func scopeFrom(b []byte) access.Scope {
	var s access.Scope
	_ = json.Unmarshal(b, &s) // written by scopeJSON
	return s
}

func roleFrom(s string) access.Role {
	r, _ := access.ParseRole(s) // the column's CHECK admits only role names
	return r
}

func (db *DB) userFrom(r dbsqlc.User) (User, error) {
	u := User{ID: r.ID, Email: r.Email, Name: r.Name, Role: roleFrom(r.Role), Scope: scopeFrom(r.Scope),
		PasswordHash: r.PasswordHash, AuthSource: r.AuthSource, DeactivatedAt: r.DeactivatedAt,
		LastLoginAt: r.LastLoginAt, CreatedAt: r.CreatedAt}
	if r.TotpSecret != "" {
		v, err := db.open(purposeTOTP, r.TotpSecret)
		if err != nil {
			return User{}, fmt.Errorf("user %d: %w", r.ID, err)
		}
		u.TOTPSecret = v
	}
	return u, nil
}

// NewUser is an account to create.
type NewUser struct {
	Email, Name  string
	Role         access.Role
	Scope        access.Scope
	PasswordHash string
	TOTPSecret   string // plaintext; stored sealed
	AuthSource   string
	Now          time.Time
}

func (db *DB) insertUser(ctx context.Context, q *dbsqlc.Queries, n NewUser) (User, error) {
	totp := ""
	if n.TOTPSecret != "" {
		var err error
		if totp, err = db.seal(purposeTOTP, n.TOTPSecret); err != nil {
			return User{}, err
		}
	}
	r, err := q.UserInsert(ctx, dbsqlc.UserInsertParams{Email: n.Email, Name: n.Name, Role: n.Role.String(),
		Scope: scopeJSON(n.Scope), PasswordHash: n.PasswordHash, TotpSecret: totp, AuthSource: n.AuthSource, Now: n.Now})
	if isCode(err, "23505") {
		return User{}, hookrelay.Errorf(hookrelay.ECONFLICT, "a user with the email %q exists", n.Email)
	}
	if err != nil {
		return User{}, fmt.Errorf("insert user: %w", unavailable(err))
	}
	return db.userFrom(r)
}

// UserCreate creates an account (single sign-on's just-in-time accounts);
// an email taken (whatever its case) is hookrelay.ECONFLICT.
func (db *DB) UserCreate(ctx context.Context, n NewUser) (User, error) {
	return db.insertUser(ctx, db.q, n)
}

// UserGet returns user id, or hookrelay.ENOTFOUND.
func (db *DB) UserGet(ctx context.Context, id int64) (User, error) {
	r, err := db.q.UserGet(ctx, id)
	if err != nil {
		return User{}, notFound(unavailableUnlessNoRows(err), "user")
	}
	return db.userFrom(r)
}

// UserByEmail returns the user of an email (whatever its case), or
// hookrelay.ENOTFOUND.
func (db *DB) UserByEmail(ctx context.Context, email string) (User, error) {
	r, err := db.q.UserByEmail(ctx, email)
	if err != nil {
		return User{}, notFound(unavailableUnlessNoRows(err), "user")
	}
	return db.userFrom(r)
}

// UserList returns up to limit users with ids above afterID, by id.
func (db *DB) UserList(ctx context.Context, afterID int64, limit int) ([]User, error) {
	rows, err := db.q.UserList(ctx, dbsqlc.UserListParams{AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list users: %w", unavailable(err))
	}
	out := make([]User, 0, len(rows))
	for _, r := range rows {
		u, err := db.userFrom(r)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// UserUpdate writes a user's role, scope and name, or hookrelay.ENOTFOUND.
func (db *DB) UserUpdate(ctx context.Context, u User) (User, error) {
	r, err := db.q.UserUpdate(ctx, dbsqlc.UserUpdateParams{ID: u.ID, Role: u.Role.String(), Scope: scopeJSON(u.Scope), Name: u.Name})
	if err != nil {
		return User{}, fmt.Errorf("update user %d: %w", u.ID, notFound(unavailableUnlessNoRows(err), "user"))
	}
	return db.userFrom(r)
}

// UserDeactivate deactivates user id at now and, in the same transaction,
// revokes its sessions and API tokens: they stop at once in every process
// (their look-ups read the user's row too).
func (db *DB) UserDeactivate(ctx context.Context, id int64, now time.Time) (User, error) {
	var u User
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		r, err := q.UserSetDeactivated(ctx, dbsqlc.UserSetDeactivatedParams{ID: id, DeactivatedAt: &now})
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "user")
		}
		if u, err = db.userFrom(r); err != nil {
			return err
		}
		if _, err := q.DashboardSessionRevokeUser(ctx, dbsqlc.DashboardSessionRevokeUserParams{UserID: &id, Now: now}); err != nil {
			return unavailable(err)
		}
		_, err = q.APITokenRevokeUser(ctx, dbsqlc.APITokenRevokeUserParams{UserID: &id, Now: now})
		return unavailable(err)
	})
	if err != nil {
		return User{}, fmt.Errorf("deactivate user %d: %w", id, err)
	}
	return u, nil
}

// UserReactivate lets user id sign in again (its old sessions and tokens
// stay revoked).
func (db *DB) UserReactivate(ctx context.Context, id int64) (User, error) {
	r, err := db.q.UserSetDeactivated(ctx, dbsqlc.UserSetDeactivatedParams{ID: id})
	if err != nil {
		return User{}, fmt.Errorf("reactivate user %d: %w", id, notFound(unavailableUnlessNoRows(err), "user"))
	}
	return db.userFrom(r)
}

// UserLoggedIn records a user's sign-in at now.
func (db *DB) UserLoggedIn(ctx context.Context, id int64, now time.Time) error {
	if err := db.q.UserLoggedIn(ctx, dbsqlc.UserLoggedInParams{ID: id, Now: now}); err != nil {
		return fmt.Errorf("user logged in: %w", unavailable(err))
	}
	return nil
}

// UserActiveOwners counts the active owners other than exceptID.
func (db *DB) UserActiveOwners(ctx context.Context, exceptID int64) (int64, error) {
	n, err := db.q.UserCountActiveOwners(ctx, exceptID)
	if err != nil {
		return 0, fmt.Errorf("count owners: %w", unavailable(err))
	}
	return n, nil
}

// UserInvite is an invitation.
type UserInvite struct {
	ID        int64
	Email     string
	Role      access.Role
	Scope     access.Scope
	ExpiresAt time.Time
}

// NewUserInvite is an invitation to record.
type NewUserInvite struct {
	TokenSHA256 []byte // SHA-256 of the link's random token
	Email       string
	Role        access.Role
	Scope       access.Scope
	Now         time.Time
	ExpiresAt   time.Time
}

// UserInviteCreate records an invitation and returns its id.
func (db *DB) UserInviteCreate(ctx context.Context, n NewUserInvite) (int64, error) {
	id, err := db.q.UserInviteInsert(ctx, dbsqlc.UserInviteInsertParams{TokenSHA256: n.TokenSHA256, Email: n.Email,
		Role: n.Role.String(), Scope: scopeJSON(n.Scope), Now: n.Now, ExpiresAt: n.ExpiresAt})
	if err != nil {
		return 0, fmt.Errorf("insert invite: %w", unavailable(err))
	}
	return id, nil
}

// UserInviteGet returns the unused, unexpired invitation of a link's
// token hash, or hookrelay.ENOTFOUND.
func (db *DB) UserInviteGet(ctx context.Context, tokenSHA256 []byte, now time.Time) (UserInvite, error) {
	r, err := db.q.UserInviteGet(ctx, dbsqlc.UserInviteGetParams{TokenSHA256: tokenSHA256, Now: now})
	if err != nil {
		return UserInvite{}, notFound(unavailableUnlessNoRows(err), "invitation")
	}
	return UserInvite{ID: r.ID, Email: r.Email, Role: roleFrom(r.Role), Scope: scopeFrom(r.Scope), ExpiresAt: r.ExpiresAt}, nil
}

// UserInviteAccept uses the invitation of a link's token hash and creates
// its user (email, role and scope from the invitation; the rest from n) in
// one transaction. An invitation unknown, used or expired is
// hookrelay.ENOTFOUND; an email taken meanwhile hookrelay.ECONFLICT.
func (db *DB) UserInviteAccept(ctx context.Context, tokenSHA256 []byte, n NewUser) (User, error) {
	var u User
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		inv, err := q.UserInviteUse(ctx, dbsqlc.UserInviteUseParams{TokenSHA256: tokenSHA256, Now: n.Now})
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "invitation")
		}
		n.Email, n.Role, n.Scope = inv.Email, roleFrom(inv.Role), scopeFrom(inv.Scope)
		u, err = db.insertUser(ctx, q, n)
		return err
	})
	if err != nil {
		return User{}, fmt.Errorf("accept invitation: %w", err)
	}
	return u, nil
}

// UserInvitesDeleteExpired deletes the invitations that expired before
// before and returns how many.
func (db *DB) UserInvitesDeleteExpired(ctx context.Context, before time.Time) (int64, error) {
	n, err := db.q.UserInviteDeleteExpired(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("delete expired invitations: %w", unavailable(err))
	}
	return n, nil
}

// UserTOTPUse records that user id's TOTP code of step was accepted and
// reports whether it was the first use of that step (a code works once:
// a replayed one, or one older than the last used, is refused).
func (db *DB) UserTOTPUse(ctx context.Context, id, step int64) (bool, error) {
	n, err := db.q.UserTOTPUse(ctx, dbsqlc.UserTOTPUseParams{ID: id, Step: step})
	if err != nil {
		return false, fmt.Errorf("use TOTP code: %w", unavailable(err))
	}
	return n == 1, nil
}
