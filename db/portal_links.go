package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// NewPortalLink is a magic link into the merchant portal to record.
type NewPortalLink struct {
	TokenSHA256 []byte // SHA-256 of the link's random token
	MerchantID  int64
	ReadOnly    bool
	Now         time.Time
	ExpiresAt   time.Time
}

// PortalLinkCreate records a link for an existing merchant (else
// hookrelay.ENOTFOUND) and returns its id.
func (db *DB) PortalLinkCreate(ctx context.Context, l NewPortalLink) (int64, error) {
	id, err := db.q.PortalLinkInsert(ctx, dbsqlc.PortalLinkInsertParams{
		TokenSHA256: l.TokenSHA256, MerchantID: l.MerchantID, ReadOnly: l.ReadOnly, Now: l.Now, ExpiresAt: l.ExpiresAt,
	})
	if err != nil {
		return 0, fmt.Errorf("insert portal link: %w", notFound(unavailableUnlessNoRows(err), "merchant"))
	}
	return id, nil
}

// PortalRedemption is the session a portal link opens.
type PortalRedemption struct {
	// TokenSHA256 is the SHA-256 of the new session's cookie token.
	TokenSHA256 []byte
	Now         time.Time
	ExpiresAt   time.Time
	UserAgent   string
	ClientAddr  string
}

// PortalLinkRedeem uses the link whose token hashes to linkSHA256 and opens
// its merchant session in the same statement, returning the session; a link
// unknown, used, expired or made before the merchant's key was rotated is
// hookrelay.ENOTFOUND, and opens nothing.
func (db *DB) PortalLinkRedeem(ctx context.Context, linkSHA256 []byte, r PortalRedemption) (LoginSession, error) {
	row, err := db.q.PortalLinkRedeem(ctx, dbsqlc.PortalLinkRedeemParams{
		TokenSHA256: linkSHA256, SessionTokenSHA256: r.TokenSHA256, Now: r.Now, SessionExpiresAt: r.ExpiresAt,
		UserAgent: r.UserAgent, ClientAddr: r.ClientAddr,
	})
	if err != nil {
		return LoginSession{}, fmt.Errorf("redeem portal link: %w", notFound(unavailableUnlessNoRows(err), "portal link"))
	}
	s := LoginSession{ID: row.ID, Kind: SessionMerchant, ReadOnly: row.ReadOnly, Portal: true, LastSeenAt: r.Now, ExpiresAt: r.ExpiresAt}
	if row.MerchantID != nil {
		s.MerchantID = *row.MerchantID
	}
	return s, nil
}

// PortalLinksDeleteExpired deletes the links that expired before before and
// returns how many.
func (db *DB) PortalLinksDeleteExpired(ctx context.Context, before time.Time) (int64, error) {
	n, err := db.q.PortalLinkDeleteExpired(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("delete expired portal links: %w", unavailable(err))
	}
	return n, nil
}
