package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// APIToken is an API token of a user or a service.
type APIToken struct {
	ID     int64
	Name   string
	Prefix string // the token's first characters, to tell tokens apart
	// UserID is the token's user (0: a service token).
	UserID     int64
	UserEmail  string
	Role       access.Role
	Scope      access.Scope
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
}

// NewAPIToken is a token to record.
type NewAPIToken struct {
	TokenSHA256 []byte
	Prefix      string
	Name        string
	UserID      int64 // 0: a service token
	Role        access.Role
	Scope       access.Scope
	Now         time.Time
	ExpiresAt   *time.Time
}

func tokenFrom(r dbsqlc.APIToken, email string) APIToken {
	t := APIToken{ID: r.ID, Name: r.Name, Prefix: r.Prefix, Role: roleFrom(r.Role), Scope: scopeFrom(r.Scope),
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, UserEmail: email}
	if r.UserID != nil {
		t.UserID = *r.UserID
	}
	return t
}

// APITokenCreate records a token.
func (db *DB) APITokenCreate(ctx context.Context, n NewAPIToken) (APIToken, error) {
	var uid *int64
	if n.UserID != 0 {
		uid = &n.UserID
	}
	r, err := db.q.APITokenInsert(ctx, dbsqlc.APITokenInsertParams{TokenSHA256: n.TokenSHA256, Prefix: n.Prefix,
		Name: n.Name, UserID: uid, Role: n.Role.String(), Scope: scopeJSON(n.Scope), Now: n.Now, ExpiresAt: n.ExpiresAt})
	if err != nil {
		return APIToken{}, fmt.Errorf("insert API token: %w", unavailable(err))
	}
	return tokenFrom(r, ""), nil
}

// TokenAuth is a valid token as a request sees it.
type TokenAuth struct {
	ID     int64
	Name   string
	UserID int64 // 0: a service token
	// Role is the role the token acts with: its own, or its user's current
	// role when that is less.
	Role       access.Role
	Scope      access.Scope
	UserEmail  string
	LastUsedAt *time.Time
}

// APITokenAuth returns the token of a hash while it is valid at now (not
// revoked, not expired, its user not deactivated), else
// hookrelay.ENOTFOUND. One look-up by the unique index on token_sha256,
// with its user's row by its key.
func (db *DB) APITokenAuth(ctx context.Context, tokenSHA256 []byte, now time.Time) (TokenAuth, error) {
	r, err := db.q.APITokenAuth(ctx, dbsqlc.APITokenAuthParams{TokenSHA256: tokenSHA256, Now: now})
	if err != nil {
		return TokenAuth{}, notFound(unavailableUnlessNoRows(err), "API token")
	}
	t := TokenAuth{ID: r.ID, Name: r.Name, Role: roleFrom(r.Role), Scope: scopeFrom(r.Scope), UserEmail: r.UserEmail, LastUsedAt: r.LastUsedAt}
	if r.UserID != nil {
		t.UserID = *r.UserID
		t.Role = min(t.Role, roleFrom(r.UserRole))
	}
	return t, nil
}

// APITokenUsed records that token id was used at now.
func (db *DB) APITokenUsed(ctx context.Context, id int64, now time.Time) error {
	if err := db.q.APITokenUsed(ctx, dbsqlc.APITokenUsedParams{ID: id, Now: now}); err != nil {
		return fmt.Errorf("API token used: %w", unavailable(err))
	}
	return nil
}

// APITokenGet returns token id (revoked or not), or hookrelay.ENOTFOUND.
func (db *DB) APITokenGet(ctx context.Context, id int64) (APIToken, error) {
	r, err := db.q.APITokenGet(ctx, id)
	if err != nil {
		return APIToken{}, notFound(unavailableUnlessNoRows(err), "API token")
	}
	return tokenFrom(r, ""), nil
}

// APITokenList returns up to limit tokens not revoked, of userID (0: of
// everyone), with ids above afterID, by id.
func (db *DB) APITokenList(ctx context.Context, userID, afterID int64, limit int) ([]APIToken, error) {
	rows, err := db.q.APITokenList(ctx, dbsqlc.APITokenListParams{UserID: userID, AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list API tokens: %w", unavailable(err))
	}
	out := make([]APIToken, len(rows))
	for i, r := range rows {
		out[i] = tokenFrom(dbsqlc.APIToken{ID: r.ID, Prefix: r.Prefix, Name: r.Name, UserID: r.UserID, Role: r.Role,
			Scope: r.Scope, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt}, r.UserEmail)
	}
	return out, nil
}

// APITokenRevoke revokes token id at now and reports whether it exists.
func (db *DB) APITokenRevoke(ctx context.Context, id int64, now time.Time) (bool, error) {
	n, err := db.q.APITokenRevoke(ctx, dbsqlc.APITokenRevokeParams{ID: id, Now: now})
	if err != nil {
		return false, fmt.Errorf("revoke API token: %w", unavailable(err))
	}
	return n > 0, nil
}
