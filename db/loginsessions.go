package db

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Kinds of login session (the dashboard's and the merchant portal's).
const (
	SessionAdmin    = "admin"
	SessionMerchant = "merchant"
)

// credentialFingerprint is what a session keeps of the credential that
// opened it: the first 8 bytes of its SHA-256 (hookrelay.HashKey), enough to
// tell the current credential from a replaced one.
func credentialFingerprint(hash []byte) []byte { return hash[:8] }

// NewLoginSession is a login to record.
type NewLoginSession struct {
	TokenSHA256 []byte // SHA-256 of the cookie's random token
	Kind        string // SessionAdmin or SessionMerchant
	MerchantID  int64  // SessionMerchant
	UserID      int64  // SessionUser
	// CredentialHash is the SHA-256 of the admin token or merchant key used
	// (a user's session: any 8 bytes or more; the user's row decides).
	CredentialHash []byte
	Now            time.Time
	ExpiresAt      time.Time
	UserAgent      string
	ClientAddr     string
}

// LoginSessionCreate records a session and returns its id.
func (db *DB) LoginSessionCreate(ctx context.Context, s NewLoginSession) (int64, error) {
	var merchantID *int64
	if s.Kind == SessionMerchant {
		merchantID = &s.MerchantID
	}
	var userID *int64
	if s.Kind == SessionUser {
		userID = &s.UserID
	}
	id, err := db.q.DashboardSessionInsert(ctx, dbsqlc.DashboardSessionInsertParams{
		TokenSHA256: s.TokenSHA256, Kind: s.Kind, MerchantID: merchantID, UserID: userID,
		CredentialFp: credentialFingerprint(s.CredentialHash), Now: s.Now, ExpiresAt: s.ExpiresAt,
		UserAgent: s.UserAgent, ClientAddr: s.ClientAddr,
	})
	if err != nil {
		return 0, fmt.Errorf("insert dashboard session: %w", unavailable(err))
	}
	return id, nil
}

// LoginSession is a valid session as a request sees it.
type LoginSession struct {
	ID         int64
	Kind       string
	MerchantID int64 // SessionMerchant
	// ReadOnly reports whether the session may only look (a read-only
	// portal link opened it).
	ReadOnly bool
	// Portal reports whether a portal link opened the session.
	Portal     bool
	LastSeenAt time.Time
	ExpiresAt  time.Time
	// A user's session (SessionUser): the user and, read with the session,
	// the user's current role, scope, email and name.
	UserID    int64
	UserRole  access.Role
	UserScope access.Scope
	UserEmail string
	UserName  string
}

// LoginSessionValid returns the session of a cookie token's hash while
// it is valid at now (not revoked, not expired, opened by the current admin
// token or merchant key), else hookrelay.ENOTFOUND. One lookup by the unique
// index on token_sha256, with the credential's row by its key.
func (db *DB) LoginSessionValid(ctx context.Context, tokenSHA256 []byte, now time.Time) (LoginSession, error) {
	r, err := db.q.DashboardSessionGet(ctx, dbsqlc.DashboardSessionGetParams{TokenSHA256: tokenSHA256, Now: now})
	if err != nil {
		return LoginSession{}, notFound(unavailableUnlessNoRows(err), "session")
	}
	s := LoginSession{ID: r.ID, Kind: r.Kind, ReadOnly: r.ReadOnly, Portal: r.Portal, LastSeenAt: r.LastSeenAt, ExpiresAt: r.ExpiresAt}
	if r.MerchantID != nil {
		s.MerchantID = *r.MerchantID
	}
	if r.UserID != nil {
		s.UserID, s.UserRole, s.UserScope = *r.UserID, roleFrom(r.UserRole), scopeFrom(r.UserScope)
		s.UserEmail, s.UserName = r.UserEmail, r.UserName
	}
	return s, nil
}

// LoginSessionSeen records that session id was used at now.
func (db *DB) LoginSessionSeen(ctx context.Context, id int64, now time.Time) error {
	if err := db.q.DashboardSessionSeen(ctx, dbsqlc.DashboardSessionSeenParams{ID: id, Now: now}); err != nil {
		return fmt.Errorf("dashboard session seen: %w", unavailable(err))
	}
	return nil
}

// LoginSessionEnd revokes the session of a cookie token's hash (logout).
func (db *DB) LoginSessionEnd(ctx context.Context, tokenSHA256 []byte, now time.Time) error {
	err := db.q.DashboardSessionRevokeByToken(ctx, dbsqlc.DashboardSessionRevokeByTokenParams{TokenSHA256: tokenSHA256, Now: now})
	if err != nil {
		return fmt.Errorf("end dashboard session: %w", unavailable(err))
	}
	return nil
}

// LoginSessionRevoke revokes session id at now and reports whether it
// was there (revoked already counts; expired does not).
func (db *DB) LoginSessionRevoke(ctx context.Context, id int64, now time.Time) (bool, error) {
	n, err := db.q.DashboardSessionRevoke(ctx, dbsqlc.DashboardSessionRevokeParams{ID: id, Now: now})
	if err != nil {
		return false, fmt.Errorf("revoke dashboard session: %w", unavailable(err))
	}
	return n > 0, nil
}

// LoginSessionRecord is a live session as the operator's list shows it.
type LoginSessionRecord struct {
	ID         int64
	Kind       string
	MerchantID int64 // SessionMerchant
	UserID     int64 // SessionUser
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
	UserAgent  string
	ClientAddr string
	// Portal reports whether a portal link opened the session (a merchant
	// sent in by the platform, no key typed); ReadOnly whether it may only
	// look.
	Portal   bool
	ReadOnly bool
}

// LoginSessionList returns up to limit live sessions at now, newest
// first, with ids below beforeID (0: from the newest).
func (db *DB) LoginSessionList(ctx context.Context, now time.Time, beforeID int64, limit int) ([]LoginSessionRecord, error) {
	rows, err := db.q.DashboardSessionList(ctx, dbsqlc.DashboardSessionListParams{Now: now, BeforeID: beforeID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list dashboard sessions: %w", unavailable(err))
	}
	out := make([]LoginSessionRecord, len(rows))
	for i, r := range rows {
		out[i] = LoginSessionRecord{ID: r.ID, Kind: r.Kind, CreatedAt: r.CreatedAt, LastSeenAt: r.LastSeenAt,
			ExpiresAt: r.ExpiresAt, UserAgent: r.UserAgent, ClientAddr: r.ClientAddr, Portal: r.Portal, ReadOnly: r.ReadOnly}
		if r.MerchantID != nil {
			out[i].MerchantID = *r.MerchantID
		}
		if r.UserID != nil {
			out[i].UserID = *r.UserID
		}
	}
	return out, nil
}

// LoginSessionsDeleteExpired deletes the sessions that expired before
// before and returns how many.
func (db *DB) LoginSessionsDeleteExpired(ctx context.Context, before time.Time) (int64, error) {
	n, err := db.q.DashboardSessionDeleteExpired(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("delete expired dashboard sessions: %w", unavailable(err))
	}
	return n, nil
}

// AdminTokenSetting is the settings row holding the admin token's SHA-256
// (hex); DashboardSessionGet reads it by this name.
const AdminTokenSetting = "admin_token_sha256"

// AdminTokenSet stores the hash of a new admin token (AdminTokenSetting) and
// revokes, in the same transaction, the admin sessions opened with any other
// token. It returns how many it revoked.
func (db *DB) AdminTokenSet(ctx context.Context, hash []byte, now time.Time) (int64, error) {
	var n int64
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		if err := q.SettingPut(ctx, dbsqlc.SettingPutParams{Name: AdminTokenSetting, Value: hex.EncodeToString(hash)}); err != nil {
			return err
		}
		var err error
		n, err = q.DashboardSessionRevokeAdminExcept(ctx, dbsqlc.DashboardSessionRevokeAdminExceptParams{
			Now: now, CredentialFp: credentialFingerprint(hash)})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("set admin token: %w", unavailable(err))
	}
	return n, nil
}

// MerchantKeyRotate gives merchant id a new API key hash and revokes, in the
// same transaction, the merchant's dashboard sessions. It returns the
// merchant and how many sessions it revoked, or hookrelay.ENOTFOUND.
func (db *DB) MerchantKeyRotate(ctx context.Context, id int64, keyHash []byte, keyPrefix string, now time.Time) (Merchant, int64, error) {
	var m Merchant
	var n int64
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		r, err := q.MerchantKeyUpdate(ctx, dbsqlc.MerchantKeyUpdateParams{ID: id, APIKeyHash: keyHash, APIKeyPrefix: keyPrefix})
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "merchant")
		}
		m = merchantFrom(r)
		n, err = q.DashboardSessionRevokeMerchant(ctx, dbsqlc.DashboardSessionRevokeMerchantParams{MerchantID: &id, Now: now})
		return unavailable(err)
	})
	if err != nil {
		return Merchant{}, 0, fmt.Errorf("rotate merchant key: %w", err)
	}
	return m, n, nil
}
