// Package sso signs operators in to the dashboard with an OpenID Connect
// provider: the authorization code flow with PKCE (S256), state and nonce,
// a verified ID token, and the configured rules (email domains, groups,
// the mapping of the provider's groups to roles) applied to who signed in.
// It answers who the person is and which role they get; the dashboard
// turns that into a user session.
package sso

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
)

// Identity is who signed in, as the provider vouched for them, with the
// role the configuration gives them.
type Identity struct {
	Subject string // the provider's stable id of the user ("sub")
	Issuer  string
	Email   string // lower-cased
	Name    string
	Groups  []string
	Role    access.Role
}

// Client is the dashboard's side of single sign-on (the OpenID relying
// party). It is safe for concurrent use.
type Client struct {
	cfg        Config
	http       *http.Client
	aead       cipher.AEAD
	cookiePath string
	secure     bool
	now        func() time.Time

	mu       sync.Mutex // guards provider and verifier, set by the first discovery that succeeds
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
}

// New returns a client for cfg, after checking it (Config.Validate). It
// does not contact the provider: discovery happens at the first sign-in
// (or Discover), so an unreachable provider never stops the dashboard
// from starting, and other logins keep working.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = slices.Clone(DefaultScopes)
	}
	if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = DefaultGroupsClaim
	}
	c := &Client{cfg: cfg, http: cfg.HTTPClient, now: time.Now}
	if c.http == nil {
		c.http = &http.Client{Timeout: 10 * time.Second}
	}
	var err error
	if c.aead, err = newAEAD(cfg.ClientSecret); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.RedirectURL) // Validate parsed it
	c.cookiePath = u.EscapedPath()
	c.secure = u.Scheme == "https"
	return c, nil
}

// Discover fetches the provider's discovery document, once: later calls
// return at once. Begin and Finish call it; calling it at start says early
// whether the provider is reachable and the issuer right.
func (c *Client) Discover(ctx context.Context) error {
	_, _, err := c.discover(ctx)
	return err
}

func (c *Client) discover(ctx context.Context) (*oidc.Provider, *oidc.IDTokenVerifier, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, c.verifier, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, c.http), c.cfg.Issuer)
	if mismatch := (*oidc.IssuerMismatchError)(nil); errors.As(err, &mismatch) {
		return nil, nil, hookrelay.WrapError(hookrelay.EUNAVAILABLE,
			fmt.Sprintf("the identity provider's issuer is %q, not the configured %q", mismatch.Discovered, mismatch.Provided), err)
	}
	if err != nil {
		return nil, nil, hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the identity provider cannot be reached; try again later", err)
	}
	c.provider = p
	c.verifier = p.Verifier(&oidc.Config{ClientID: c.cfg.ClientID, Now: c.now})
	return c.provider, c.verifier, nil
}

func (c *Client) oauth2Config(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     c.cfg.ClientID,
		ClientSecret: c.cfg.ClientSecret,
		RedirectURL:  c.cfg.RedirectURL,
		Endpoint:     p.Endpoint(),
		Scopes:       c.cfg.Scopes,
	}
}

// maxReturnTo is the longest page to return to that Begin takes: the
// cookie that carries it must stay well under browsers' 4 KB.
const maxReturnTo = 1024

// Begin starts a sign-in: it redirects the browser (302) to the provider,
// with a fresh state, nonce and PKCE challenge, and keeps them with
// returnTo in a sealed cookie for Finish. returnTo is where the browser
// goes once signed in: a path of this site ("/ui/messages?q=x"), or ""
// for the caller's default; anything else (another host, a scheme, "//")
// is refused with EINVALID and nothing is written.
func (c *Client) Begin(w http.ResponseWriter, r *http.Request, returnTo string) error {
	if returnTo != "" && (!IsLocalPath(returnTo) || len(returnTo) > maxReturnTo) {
		return hookrelay.Errorf(hookrelay.EINVALID, "the page to return to must be a path of this site")
	}
	p, _, err := c.discover(r.Context())
	if err != nil {
		return err
	}
	f := flow{
		State:    randomString(),
		Nonce:    randomString(),
		Verifier: oauth2.GenerateVerifier(),
		ReturnTo: returnTo,
		Expires:  c.now().Add(flowTTL),
	}
	value, err := seal(c.aead, f)
	if err != nil {
		return hookrelay.WrapError(hookrelay.EINTERNAL, "cannot start the sign-in", err)
	}
	http.SetCookie(w, c.flowCookie(value, int(flowTTL/time.Second)))
	target := c.oauth2Config(p).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	http.Redirect(w, r, target, http.StatusFound)
	return nil
}

// Finish completes the sign-in at the callback: it checks the state
// against Begin's cookie (and ends that cookie, so it serves once),
// exchanges the code with the PKCE verifier, verifies the ID token
// (signature, issuer, audience, expiry) and its nonce, reads the groups
// from the userinfo endpoint when the ID token has none, and applies the
// rules. It returns who signed in and Begin's returnTo. Its errors are
// *hookrelay.Error with a message safe to show: EUNAUTHORIZED when the
// sign-in itself failed (start again), EFORBIDDEN when the person is not
// admitted (the Identity is then filled as far as known, for the log),
// EUNAVAILABLE when the provider cannot be reached.
func (c *Client) Finish(w http.ResponseWriter, r *http.Request) (Identity, string, error) {
	http.SetCookie(w, c.flowCookie("", -1))
	f, code, err := c.callback(r)
	if err != nil {
		return Identity{}, "", err
	}
	id, err := c.redeem(r.Context(), f, code)
	if err != nil {
		return id, "", err
	}
	return id, f.ReturnTo, nil
}

// callback reads the provider's answer at the callback: the flow Begin
// sealed in the cookie, checked against the answer's state, and the code.
func (c *Client) callback(r *http.Request) (flow, string, error) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return flow{}, "", hookrelay.WrapError(hookrelay.EUNAUTHORIZED,
			"the identity provider did not sign you in ("+safeCode(e)+")", errorFromProvider(q))
	}
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return flow{}, "", hookrelay.WrapError(hookrelay.EUNAUTHORIZED, "the sign-in expired or began in another browser; sign in again", err)
	}
	f, err := open(c.aead, ck.Value, c.now())
	if err != nil {
		return flow{}, "", hookrelay.WrapError(hookrelay.EUNAUTHORIZED, "the sign-in expired or began in another browser; sign in again", err)
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		return flow{}, "", hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "the sign-in does not match the one this browser began; sign in again")
	}
	code := q.Get("code")
	if code == "" {
		return flow{}, "", hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "the identity provider sent no authorization code; sign in again")
	}
	return f, code, nil
}

// redeem exchanges the code with the flow's PKCE verifier, verifies the ID
// token and its nonce, completes the claims from userinfo and applies the
// rules. A refused person's Identity is returned with the error, as far as
// it is known, for the log.
func (c *Client) redeem(ctx context.Context, f flow, code string) (Identity, error) {
	p, verifier, err := c.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	ctx = oidc.ClientContext(context.WithValue(ctx, oauth2.HTTPClient, c.http), c.http)
	tok, err := c.oauth2Config(p).Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return Identity{}, hookrelay.WrapError(hookrelay.EUNAUTHORIZED, "the identity provider refused the sign-in code; sign in again", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "the identity provider sent no ID token")
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, hookrelay.WrapError(hookrelay.EUNAUTHORIZED, "the identity provider's ID token does not verify", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return Identity{}, hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "the ID token was not issued for this sign-in; sign in again")
	}
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			return Identity{}, hookrelay.WrapError(hookrelay.EUNAUTHORIZED, "the identity provider's tokens do not match", err)
		}
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, hookrelay.WrapError(hookrelay.EUNAUTHORIZED, "the identity provider's ID token does not verify", err)
	}
	if err := c.addUserinfo(ctx, p, tok, idt.Subject, claims); err != nil {
		return Identity{}, err
	}
	return c.admit(idt.Issuer, idt.Subject, claims)
}

// addUserinfo fills claims the ID token lacks (the groups, the email)
// from the provider's userinfo endpoint, when it has one: some providers
// put the groups only there. The answer must be about the same subject.
func (c *Client) addUserinfo(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, subject string, claims map[string]any) error {
	_, hasGroups := claims[c.cfg.GroupsClaim]
	_, hasEmail := claims["email"]
	if (hasGroups && hasEmail) || p.UserInfoEndpoint() == "" {
		return nil
	}
	info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the identity provider's userinfo endpoint failed; try again", err)
	}
	if info.Subject != subject {
		return hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "the identity provider's userinfo is about another user")
	}
	more := map[string]any{}
	if err := info.Claims(&more); err != nil {
		return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the identity provider's userinfo cannot be read", err)
	}
	for k, v := range more {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return nil
}

// IsLocalPath reports whether s is a path of this site that a redirect
// may go to: it starts with one "/" (not "//" or "/\", which browsers
// read as another host), and has no scheme, host or control character.
func IsLocalPath(s string) bool {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, `/\`) {
		return false
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}

// randomString returns 32 random bytes, base64url-encoded.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// safeCode keeps an OAuth error code short and printable before it is
// shown to a person.
func safeCode(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// providerError is an error answer at the callback, for the log.
type providerError struct{ code, description string }

func (e providerError) Error() string { return "provider error " + e.code + ": " + e.description }

func errorFromProvider(q url.Values) error {
	return providerError{code: q.Get("error"), description: q.Get("error_description")}
}
