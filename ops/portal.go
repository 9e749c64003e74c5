package ops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// Bounds and default of a portal link's life.
const (
	MinPortalLinkTTL     = time.Minute
	MaxPortalLinkTTL     = 24 * time.Hour
	DefaultPortalLinkTTL = 15 * time.Minute
)

// PortalLinkPath is where a portal link opens, on the dashboard's address;
// the token follows in the query parameter "token".
const PortalLinkPath = "/ui/portal/open"

// PortalLink is a magic link's token (shown once; only its hash is kept)
// and when it stops working.
type PortalLink struct {
	Token     string
	ExpiresAt time.Time
}

// CreatePortalLink makes a single-use link that opens a session of merchant
// id in the portal (read-only when readOnly), valid for ttl (between
// MinPortalLinkTTL and MaxPortalLinkTTL). Operators only.
func (s *Service) CreatePortalLink(ctx context.Context, merchantID int64, ttl time.Duration, readOnly bool) (out PortalLink, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "portal_link.create", TargetType: targetMerchant, TargetID: audit.ID(merchantID),
			After: map[string]any{"ttl": ttl.String(), "read_only": readOnly, "expires_at": out.ExpiresAt}}, err)
	}()
	if ttl < MinPortalLinkTTL || ttl > MaxPortalLinkTTL {
		return PortalLink{}, hookrelay.Errorf(hookrelay.EINVALID, "ttl must be between 1m and 24h, such as \"15m\"")
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token := base64.RawURLEncoding.EncodeToString(b)
	now := s.now()
	exp := now.Add(ttl).UTC().Truncate(time.Second)
	if _, err := s.db.PortalLinkCreate(ctx, db.NewPortalLink{
		TokenSHA256: PortalTokenHash(token), MerchantID: merchantID, ReadOnly: readOnly, Now: now, ExpiresAt: exp,
	}); err != nil {
		return PortalLink{}, err
	}
	return PortalLink{Token: token, ExpiresAt: exp}, nil
}

// PortalTokenHash is what is stored of a portal link's token.
func PortalTokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
