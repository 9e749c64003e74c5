package web

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// Sessions are rows of the dashboard_sessions table: the cookie carries only
// a random token, the row its SHA-256. Every authenticated request looks the
// row up (one indexed read), so a logout, a revocation by the operator or a
// rotated admin token or merchant key ends the session at once in every
// process. The CSRF token is a MAC of the session's token hash under a
// random key stored sealed in the settings table (shared by every process
// running the web role).
const (
	sessionCookie     = "hr_session"
	loginCookie       = "hr_login" // double-submit CSRF token of the login form
	sessionKeySetting = db.WebSessionKeySetting
	// seenEvery is how stale a session's last_seen_at may get before a
	// request updates it: the operator's list needs minutes, not a write
	// per page.
	seenEvery = time.Minute
	// maxUserAgent bounds what a session row keeps of the User-Agent.
	maxUserAgent = 200
)

// Session kinds.
const (
	kindAdmin    = db.SessionAdmin
	kindMerchant = db.SessionMerchant
	kindUser     = db.SessionUser
)

// claims is the session of a request.
type claims struct {
	ID         int64 // the dashboard_sessions row
	Kind       string
	MerchantID int64
	ReadOnly   bool   // the session may only look (a read-only portal link)
	Portal     bool   // a portal link opened the session
	tokenHash  []byte // SHA-256 of the cookie's token; the CSRF token derives from it
	// Role is the operator's role: owner for the admin token's sessions,
	// the user's current one for a user's, none for a merchant's.
	Role   access.Role
	Scope  access.Scope
	UserID int64  // kindUser
	Email  string // kindUser
	Name   string // kindUser
}

// Operator reports whether the session is an operator's (the admin
// token's or a user's), not a merchant's.
func (c claims) Operator() bool { return c.Role != access.RoleNone }

// Can reports whether the session's role allows what role (a role's name)
// may do: the pages show only the actions it can take.
func (c claims) Can(role string) bool {
	r, err := access.ParseRole(role)
	return err == nil && c.Role.Allows(r)
}

// May reports whether the session may take an action that operators need
// role (a role's name) for: a merchant's session on its own objects
// always (its own rules apply), an operator's with that role or more.
// Pages shared by both views use it.
func (c claims) May(role string) bool { return !c.Operator() || c.Can(role) }

// Who names the session's holder for people.
func (c claims) Who() string {
	switch c.Kind {
	case kindUser:
		return cmp.Or(c.Name, c.Email)
	case kindAdmin:
		return "admin token"
	}
	return ""
}

// principal is the session's principal, from client addr.
func (c claims) principal(from client) access.Principal {
	p := access.Principal{Role: c.Role, Scope: c.Scope, SessionID: c.ID, Addr: from.Addr, UserAgent: from.UserAgent}
	switch c.Kind {
	case kindAdmin:
		p.Kind, p.Name = access.KindBreakGlass, "admin token"
	case kindUser:
		p.Kind, p.UserID, p.Name = access.KindUser, c.UserID, c.Email
	default:
		p.Kind, p.MerchantID = access.KindPortal, c.MerchantID
	}
	return p
}

type sessions struct {
	key    []byte
	store  Store
	ttl    time.Duration
	secure bool
	// framed: the portal may be embedded (Config.PortalFrameAncestors), so
	// the cookies of portal sessions are SameSite=None; Secure, which an
	// iframe on another site needs.
	framed bool
	now    func() time.Time
}

func newSessions(ctx context.Context, store Store, ttl time.Duration, secure, framed bool, now func() time.Time) (*sessions, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	// Stored sealed, like the other secrets: whoever reads the settings
	// table cannot forge the CSRF tokens.
	v, err := store.WebSessionKey(ctx, hex.EncodeToString(fresh))
	if err != nil {
		return nil, fmt.Errorf("load session key: %w", err)
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("setting %s is not a hex key", sessionKeySetting)
	}
	return &sessions{key: key, store: store, ttl: ttl, secure: secure, framed: framed, now: now}, nil
}

func (s *sessions) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// client is who logs in, as the operator's list of sessions shows it.
type client struct {
	Addr      string
	UserAgent string
}

var errBadCredential = hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "unknown token or key")

// login checks a credential (admin token or merchant key), records a session
// for it and returns the session cookie.
func (s *sessions) login(ctx context.Context, credential string, from client) (*http.Cookie, claims, error) {
	credential = strings.TrimSpace(credential)
	if credential == "" {
		return nil, claims{}, errBadCredential
	}
	hash := hookrelay.HashKey(credential)
	var c claims
	switch {
	case strings.HasPrefix(credential, hookrelay.MerchantKeyPrefix):
		m, err := s.store.MerchantByKeyHash(ctx, hash)
		if err != nil {
			if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
				return nil, claims{}, errBadCredential
			}
			return nil, claims{}, err
		}
		c.Kind, c.MerchantID = kindMerchant, m.ID
	default:
		want, err := s.store.SettingGet(ctx, db.AdminTokenSetting)
		if err != nil {
			return nil, claims{}, err
		}
		if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(hash)), []byte(want)) != 1 {
			return nil, claims{}, errBadCredential
		}
		c.Kind, c.Role = kindAdmin, access.Owner
	}
	token := randomToken(32)
	c.tokenHash = tokenHash(token)
	now := s.now()
	id, err := s.store.LoginSessionCreate(ctx, db.NewLoginSession{
		TokenSHA256: c.tokenHash, Kind: c.Kind, MerchantID: c.MerchantID, CredentialHash: hash,
		Now: now, ExpiresAt: now.Add(s.ttl), UserAgent: cleanText(from.UserAgent, maxUserAgent), ClientAddr: from.Addr,
	})
	if err != nil {
		return nil, claims{}, err
	}
	c.ID = id
	return s.cookie(sessionCookie, token, s.ttl), c, nil
}

// cleanText makes header text storable: valid UTF-8 without NUL, at most n
// bytes (cut at a character boundary).
func cleanText(v string, n int) string {
	v = strings.ReplaceAll(strings.ToValidUTF8(v, "\uFFFD"), "\x00", "")
	if len(v) <= n {
		return v
	}
	return strings.ToValidUTF8(v[:n], "")
}

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func (s *sessions) cookie(name, value string, ttl time.Duration) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: "/ui", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode,
	}
}

func (s *sessions) clear(name string) *http.Cookie {
	return &http.Cookie{Name: name, Value: "", Path: "/ui", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode}
}

// portalCookie is the session cookie of a session a portal link opened
// (value "" with ttl < 0 clears it). Where the portal may be framed it is
// SameSite=None (sent inside an iframe on another site), so Secure, as
// browsers require, and Partitioned; elsewhere it is the dashboard's own
// cookie.
func (s *sessions) portalCookie(value string, ttl time.Duration) *http.Cookie {
	ck := s.cookie(sessionCookie, value, ttl)
	if ttl < 0 {
		ck.MaxAge = -1
	}
	if s.framed {
		// Partitioned (CHIPS): the browser keeps the cookie for this
		// top-level site only, which it allows where it blocks
		// third-party cookies (Chromium's default now, Safari's, Firefox's
		// partitioning); the link opens inside the iframe, so the session
		// lives in that partition.
		ck.SameSite, ck.Secure, ck.Partitioned = http.SameSiteNoneMode, true, true
	}
	return ck
}

// clearSession clears the session cookie of c the way it was set.
func (s *sessions) clearSession(c claims) *http.Cookie {
	if c.Portal {
		return s.portalCookie("", -1)
	}
	return s.clear(sessionCookie)
}

// redeem opens the session of a portal link's token (single use) and
// returns its cookie; a link unknown, used or expired is errBadLink.
func (s *sessions) redeem(ctx context.Context, link string, from client) (*http.Cookie, claims, error) {
	if link == "" || len(link) > 100 {
		return nil, claims{}, errBadLink
	}
	token := randomToken(32)
	now := s.now()
	row, err := s.store.PortalLinkRedeem(ctx, ops.PortalTokenHash(link), db.PortalRedemption{
		TokenSHA256: tokenHash(token), Now: now, ExpiresAt: now.Add(s.ttl),
		UserAgent: cleanText(from.UserAgent, maxUserAgent), ClientAddr: from.Addr,
	})
	if err != nil {
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			return nil, claims{}, errBadLink
		}
		return nil, claims{}, err
	}
	c := claims{ID: row.ID, Kind: kindMerchant, MerchantID: row.MerchantID, ReadOnly: row.ReadOnly, Portal: true, tokenHash: tokenHash(token)}
	return s.portalCookie(token, s.ttl), c, nil
}

var errBadLink = hookrelay.Errorf(hookrelay.ENOTFOUND, "This portal link is unknown, expired or used already: a link opens the portal once. Ask for a new one.")

var errNoSession = errors.New("no valid session")

// check returns the session of a cookie's token while it is valid.
func (s *sessions) check(ctx context.Context, token string) (claims, error) {
	if len(token) != base64.RawURLEncoding.EncodedLen(32) {
		return claims{}, errNoSession
	}
	h := tokenHash(token)
	now := s.now()
	row, err := s.store.LoginSessionValid(ctx, h, now)
	if err != nil {
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			return claims{}, errNoSession
		}
		return claims{}, err
	}
	if now.Sub(row.LastSeenAt) >= seenEvery {
		// Only the operator's list reads last_seen_at: a failure to record
		// it must not refuse the request.
		_ = s.store.LoginSessionSeen(ctx, row.ID, now)
	}
	c := claims{ID: row.ID, Kind: row.Kind, MerchantID: row.MerchantID, ReadOnly: row.ReadOnly, Portal: row.Portal, tokenHash: h}
	switch row.Kind {
	case kindAdmin:
		c.Role = access.Owner
	case kindUser:
		c.Role, c.Scope, c.UserID, c.Email, c.Name = row.UserRole, row.UserScope, row.UserID, row.UserEmail, row.UserName
	}
	return c, nil
}

// open records a session of user u and returns its cookie.
func (s *sessions) open(ctx context.Context, u db.User, from client) (*http.Cookie, claims, error) {
	token := randomToken(32)
	c := claims{Kind: kindUser, UserID: u.ID, Role: u.Role, Scope: u.Scope, Email: u.Email, Name: u.Name, tokenHash: tokenHash(token)}
	now := s.now()
	id, err := s.store.LoginSessionCreate(ctx, db.NewLoginSession{
		TokenSHA256: c.tokenHash, Kind: kindUser, UserID: u.ID, CredentialHash: c.tokenHash,
		Now: now, ExpiresAt: now.Add(s.ttl), UserAgent: cleanText(from.UserAgent, maxUserAgent), ClientAddr: from.Addr,
	})
	if err != nil {
		return nil, claims{}, err
	}
	c.ID = id
	return s.cookie(sessionCookie, token, s.ttl), c, nil
}

// end revokes the session (logout).
func (s *sessions) end(ctx context.Context, c claims) error {
	return s.store.LoginSessionEnd(ctx, c.tokenHash, s.now())
}

// csrfToken is the token forms of this session must carry.
func (s *sessions) csrfToken(c claims) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", hex.EncodeToString(c.tokenHash)))
}

// validCSRF reports whether token is the session's CSRF token.
func (s *sessions) validCSRF(c claims, token string) bool {
	return token != "" && len(c.tokenHash) > 0 && hmac.Equal([]byte(token), []byte(s.csrfToken(c)))
}

// randomToken returns n random bytes, base64url.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
