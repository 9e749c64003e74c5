package api

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"math"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/throttle"
)

// adminTokenSetting is the settings row holding the admin token's SHA-256 (hex).
const adminTokenSetting = db.AdminTokenSetting

type keyKind int

const (
	// kindAdmin is an operator: the break-glass admin token or an API
	// token of a user or service; its role says what it may do.
	kindAdmin keyKind = 1 << iota
	kindMerchant
	kindCarrier
)

// principal is who a request authenticated as.
type principal struct {
	kind       keyKind
	merchantID int64      // kindMerchant
	carrier    db.Carrier // kindCarrier
	// who is the principal the operations and the audit log see (in the
	// request's context too).
	who access.Principal
}

const principalKey = "hookrelay.principal"

func principalOf(c echo.Context) principal {
	p, _ := c.Get(principalKey).(principal)
	return p
}

// actorOf is on whose behalf the request acts: a merchant key that
// merchant, an operator everything its scope allows.
func actorOf(c echo.Context) ops.Actor {
	return ops.FromPrincipal(principalOf(c).who)
}

var (
	errNoKey    = hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "missing bearer token (Authorization: Bearer <key>)")
	errBadKey   = hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "invalid API key")
	errWrongKey = hookrelay.Errorf(hookrelay.EFORBIDDEN, "this key may not use this endpoint")
)

// auth authenticates the bearer token and lets the request through when
// the route's need admits it (need.admits). An unknown or malformed token
// is 401; a valid key of another kind, or an operator's role below the
// route's, is 403 (consistently, on every route). A client address whose
// tokens failed too often waits (throttle): 429 with Retry-After,
// whatever it sends meanwhile. A valid token forgives none of its
// address's failures: the throttle forgets them with time only. The
// principal goes into the request's context (access.FromContext).
func (s *Server) auth(n need) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			addr := throttle.ClientAddr(c.Request())
			wait, _ := s.cfg.Throttle.Wait(throttle.SurfaceAPI, addr)
			if wait > 0 {
				secs := int(math.Ceil(wait.Seconds()))
				return httperr.WithRetryAfter(hookrelay.Errorf(hookrelay.ERATELIMIT,
					"too many failed authentications from this address; retry in %d s", secs), secs)
			}
			h := c.Request().Header.Get("Authorization")
			token, ok := strings.CutPrefix(h, "Bearer ")
			if !ok || token == "" {
				return errNoKey
			}
			p, err := s.authenticate(c.Request().Context(), strings.TrimSpace(token))
			if err != nil {
				if hookrelay.CodeOf(err) == hookrelay.EUNAUTHORIZED {
					s.cfg.Throttle.Failed(throttle.SurfaceAPI, addr)
				}
				return err
			}
			if err := n.admits(c, p.who); err != nil {
				return err
			}
			p.who.Addr, p.who.UserAgent = addr, c.Request().UserAgent()
			c.Set(principalKey, p)
			if p.kind != kindCarrier {
				// The callbacks' principal stays out of their context: the
				// intake path does not pay for it.
				c.SetRequest(c.Request().WithContext(access.WithPrincipal(c.Request().Context(), p.who)))
			}
			return next(c)
		}
	}
}

func (s *Server) authenticate(ctx context.Context, token string) (principal, error) {
	hash := hookrelay.HashKey(token)
	switch {
	case strings.HasPrefix(token, hookrelay.AdminTokenPrefix) || !strings.HasPrefix(token, "hr"):
		// The admin token may be any string set by HOOKRELAY_ADMIN_TOKEN.
		want, err := s.adminTokenHash(ctx)
		if err != nil {
			return principal{}, err
		}
		if subtle.ConstantTimeCompare(hash, want) == 1 {
			return principal{kind: kindAdmin, who: access.Principal{Kind: access.KindBreakGlass, Role: access.Owner, Name: "admin token"}}, nil
		}
	case strings.HasPrefix(token, hookrelay.APITokenPrefix):
		return s.tokenPrincipal(ctx, hash)
	case strings.HasPrefix(token, hookrelay.CarrierKeyPrefix):
		c, err := s.carrierByKey(ctx, hash)
		if err != nil {
			return principal{}, err
		}
		return principal{kind: kindCarrier, carrier: c,
			who: access.Principal{Kind: access.KindCarrier, CarrierID: c.ID, Name: c.Name}}, nil
	case strings.HasPrefix(token, hookrelay.MerchantKeyPrefix):
		// Read from the database, not the configuration cache: a rotated
		// merchant key stops working at once in every process. Merchant
		// requests manage endpoints; they are not the callback hot path.
		m, err := s.db.MerchantByKeyHash(ctx, hash)
		if err != nil {
			return principal{}, notFoundAs(err, errBadKey)
		}
		if hookrelay.KeyMatches(token, m.APIKeyHash) {
			return principal{kind: kindMerchant, merchantID: m.ID,
				who: access.Principal{Kind: access.KindMerchant, MerchantID: m.ID, Name: m.Name}}, nil
		}
	}
	return principal{}, errBadKey
}

// tokenUsedEvery is how stale a token's last use may get before a request
// records it: a write per minute at most, not per request.
const tokenUsedEvery = time.Minute

// tokenPrincipal is the principal of an API token's hash. Read from the
// database on every request (one index look-up with its user's row): a
// revoked token, or one whose user was deactivated or demoted, changes at
// once in every process.
func (s *Server) tokenPrincipal(ctx context.Context, hash []byte) (principal, error) {
	now := time.Now()
	t, err := s.db.APITokenAuth(ctx, hash, now)
	if err != nil {
		return principal{}, notFoundAs(err, errBadKey)
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= tokenUsedEvery {
		// Only the token list reads last_used_at: a failure to record it
		// must not refuse the request.
		_ = s.db.APITokenUsed(ctx, t.ID, now)
	}
	name := t.Name
	if t.UserEmail != "" {
		name = t.UserEmail + " (" + t.Name + ")"
	}
	return principal{kind: kindAdmin, who: access.Principal{Kind: access.KindToken, Role: t.Role, Scope: t.Scope,
		UserID: t.UserID, TokenID: t.ID, Name: name}}, nil
}

// carrierByKey finds the carrier of an API key's hash in the routing
// snapshot, else in the database (a carrier created in another process
// within the snapshot's TTL).
func (s *Server) carrierByKey(ctx context.Context, hash []byte) (db.Carrier, error) {
	snap, err := s.routes.Snapshot(ctx)
	if err != nil {
		return db.Carrier{}, err
	}
	// Found by the key's hash: its current key, or one a rotation replaced
	// within the rotation's overlap.
	c, ok := snap.CarrierByKeyHash(hash)
	if !ok {
		if c, err = s.db.CarrierByKeyHash(ctx, hash); err != nil {
			return db.Carrier{}, notFoundAs(err, errBadKey)
		}
	}
	return c, nil
}

// notFoundAs replaces a not-found error with repl.
func notFoundAs(err, repl error) error {
	if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
		return repl
	}
	return err
}

// adminTokenHash returns the stored admin token hash, cached AdminTokenTTL.
func (s *Server) adminTokenHash(ctx context.Context) ([]byte, error) {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	if s.adminHash != nil && time.Since(s.adminLoaded) < s.cfg.AdminTokenTTL {
		return s.adminHash, nil
	}
	v, err := s.db.SettingGet(ctx, adminTokenSetting)
	if err != nil {
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			return nil, errBadKey
		}
		return nil, err
	}
	h, err := hex.DecodeString(v)
	if err != nil {
		return nil, hookrelay.WrapError(hookrelay.EINTERNAL, "stored admin token hash is not hex", err)
	}
	s.adminHash, s.adminLoaded = h, time.Now()
	return h, nil
}
