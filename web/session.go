package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
)

// Session cookie: base64url(JSON claims) "." base64url(HMAC-SHA256(key, claims)).
// The key is random, stored in the settings table (shared by every process
// running the web role). Claims carry a fingerprint of the credential used to
// log in, so changing the admin token or a merchant key ends its sessions.
const (
	sessionCookie     = "hr_session"
	loginCookie       = "hr_login" // double-submit CSRF token of the login form
	sessionKeySetting = "web_session_key"
	adminTokenSetting = "admin_token_sha256"
)

// Session kinds.
const (
	kindAdmin    = "admin"
	kindMerchant = "merchant"
)

type claims struct {
	Kind       string `json:"k"`
	MerchantID int64  `json:"m,omitempty"`
	Cred       string `json:"c"` // first 16 hex digits of the credential's SHA-256
	Expires    int64  `json:"e"` // unix seconds
	Nonce      string `json:"n"` // per-login random; the CSRF token derives from it
}

type sessions struct {
	key    []byte
	store  Store
	ttl    time.Duration
	secure bool
	now    func() time.Time
}

func newSessions(ctx context.Context, store Store, ttl time.Duration, secure bool, now func() time.Time) (*sessions, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	if _, err := store.SettingPutIfAbsent(ctx, sessionKeySetting, hex.EncodeToString(fresh)); err != nil {
		return nil, fmt.Errorf("store session key: %w", err)
	}
	v, err := store.SettingGet(ctx, sessionKeySetting)
	if err != nil {
		return nil, fmt.Errorf("load session key: %w", err)
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("setting %s is not a hex key", sessionKeySetting)
	}
	return &sessions{key: key, store: store, ttl: ttl, secure: secure, now: now}, nil
}

func (s *sessions) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

func fingerprint(hash []byte) string { return hex.EncodeToString(hash)[:16] }

// login checks a credential (admin token or merchant key) and returns the
// session cookie for it.
func (s *sessions) login(ctx context.Context, credential string) (*http.Cookie, claims, error) {
	credential = strings.TrimSpace(credential)
	bad := hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "unknown token or key")
	if credential == "" {
		return nil, claims{}, bad
	}
	hash := hookrelay.HashKey(credential)
	c := claims{Cred: fingerprint(hash), Expires: s.now().Add(s.ttl).Unix(), Nonce: randomToken()}
	switch {
	case strings.HasPrefix(credential, hookrelay.MerchantKeyPrefix):
		m, err := s.store.MerchantByKeyHash(ctx, hash)
		if err != nil {
			if hookrelay.ErrorCode(err) == hookrelay.ENOTFOUND {
				return nil, claims{}, bad
			}
			return nil, claims{}, err
		}
		c.Kind, c.MerchantID = kindMerchant, m.ID
	default:
		want, err := s.store.SettingGet(ctx, adminTokenSetting)
		if err != nil {
			return nil, claims{}, err
		}
		got := hex.EncodeToString(hash)
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return nil, claims{}, bad
		}
		c.Kind = kindAdmin
	}
	raw, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	value := payload + "." + base64.RawURLEncoding.EncodeToString(s.mac("session", payload))
	return s.cookie(sessionCookie, value, s.ttl), c, nil
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

var errNoSession = errors.New("no valid session")

// check verifies the session cookie value and that its credential is still
// the current one.
func (s *sessions) check(ctx context.Context, value string) (claims, error) {
	payload, sig, ok := strings.Cut(value, ".")
	if !ok {
		return claims{}, errNoSession
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac("session", payload)) {
		return claims{}, errNoSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return claims{}, errNoSession
	}
	var c claims
	if json.Unmarshal(raw, &c) != nil || s.now().Unix() >= c.Expires {
		return claims{}, errNoSession
	}
	switch c.Kind {
	case kindAdmin:
		want, err := s.store.SettingGet(ctx, adminTokenSetting)
		if err != nil {
			return claims{}, err
		}
		if len(want) < 16 || want[:16] != c.Cred {
			return claims{}, errNoSession
		}
	case kindMerchant:
		m, err := s.store.MerchantGet(ctx, c.MerchantID)
		if err != nil {
			if hookrelay.ErrorCode(err) == hookrelay.ENOTFOUND {
				return claims{}, errNoSession
			}
			return claims{}, err
		}
		if fingerprint(m.APIKeyHash) != c.Cred {
			return claims{}, errNoSession
		}
	default:
		return claims{}, errNoSession
	}
	return c, nil
}

// csrfToken is the token forms of this session must carry.
func (s *sessions) csrfToken(c claims) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", c.Nonce))
}

// validCSRF reports whether token is the session's CSRF token.
func (s *sessions) validCSRF(c claims, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrfToken(c)))
}

func randomToken() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
