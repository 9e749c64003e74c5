package sso_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/internal/oidctest"
	"github.com/hookrelay/hookrelay/sso"
)

// users are the provider's people in every test.
var users = []oidctest.User{
	{Username: "alice", Email: "Alice@Example.com", EmailVerified: true, Name: "Alice", Groups: []string{"ops-support", "ops-owners", "everyone"}},
	{Username: "sam", Email: "sam@example.com", EmailVerified: true, Name: "Sam", Groups: []string{"ops-support"}},
	{Username: "olga", Email: "olga@other.example", EmailVerified: true, Name: "Olga", Groups: []string{"ops-owners"}},
	{Username: "mark", Email: "mark@example.com", EmailVerified: true, Name: "Mark", Groups: []string{"marketing"}},
	{Username: "una", Email: "una@example.com", EmailVerified: false, Name: "Una", Groups: []string{"ops-owners"}},
}

// fixture is a dashboard whose two single sign-on routes call the sso
// client, and the OpenID provider it signs in with, both on loopback.
type fixture struct {
	t        *testing.T
	provider *oidctest.Provider
	sso      *sso.Client
	cfg      sso.Config
	dash     *httptest.Server

	mu      sync.Mutex
	lastErr error // the last error Finish or Begin returned

	ahead atomic.Int64 // how far the dashboard's clock is ahead (a time.Duration)
}

// result is what the test dashboard's callback answers.
type result struct {
	Identity sso.Identity
	ReturnTo string
	Code     hookrelay.ErrorCode
	Message  string
}

func setup(t *testing.T, opts oidctest.Options, edit func(*sso.Config)) *fixture {
	t.Helper()
	f := &fixture{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/sso/login", func(w http.ResponseWriter, r *http.Request) {
		if err := f.sso.Begin(w, r, r.URL.Query().Get("next")); err != nil {
			f.fail(w, err)
		}
	})
	mux.HandleFunc("GET /ui/sso/callback", func(w http.ResponseWriter, r *http.Request) {
		id, returnTo, err := f.sso.Finish(w, r)
		if err != nil {
			f.fail(w, err)
			return
		}
		_ = json.NewEncoder(w).Encode(result{Identity: id, ReturnTo: returnTo})
	})
	f.dash = httptest.NewServer(mux)
	t.Cleanup(f.dash.Close)

	opts.Users = users
	opts.RedirectURIs = []string{f.dash.URL + "/ui/sso/callback"}
	f.provider = oidctest.Start(t, opts)
	f.cfg = sso.Config{
		Issuer:         f.provider.Issuer,
		ClientID:       f.provider.ClientID,
		ClientSecret:   f.provider.ClientSecret,
		RedirectURL:    f.dash.URL + "/ui/sso/callback",
		AllowedDomains: []string{"example.com"},
		RoleMap:        map[string]access.Role{"ops-owners": access.Owner, "ops-support": access.Support},
	}
	if edit != nil {
		edit(&f.cfg)
	}
	var err error
	f.sso, err = sso.New(f.cfg)
	require.NoError(t, err)
	sso.SetClock(f.sso, func() time.Time { return time.Now().Add(time.Duration(f.ahead.Load())) })
	return f
}

func (f *fixture) fail(w http.ResponseWriter, err error) {
	f.mu.Lock()
	f.lastErr = err
	f.mu.Unlock()
	w.WriteHeader(hookrelay.HTTPStatus(err))
	_ = json.NewEncoder(w).Encode(result{Code: hookrelay.CodeOf(err), Message: hookrelay.ErrorMessage(err)})
}

func (f *fixture) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastErr
}

// browser is a cookie jar and a client that follows no redirect by itself,
// so that a test sees, and may change, each step of a sign-in.
type browser struct {
	t *testing.T
	c *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(u string) *http.Response {
	b.t.Helper()
	resp, err := b.c.Get(u)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// begin opens the dashboard's SSO login with next and returns the
// provider's authorize URL it redirected to.
func (b *browser) begin(f *fixture, next string) *url.URL {
	b.t.Helper()
	resp := b.get(f.dash.URL + "/ui/sso/login?next=" + url.QueryEscape(next))
	require.Equal(b.t, http.StatusFound, resp.StatusCode)
	loc, err := resp.Location()
	require.NoError(b.t, err)
	require.True(b.t, strings.HasPrefix(loc.String(), f.provider.Issuer+"/"), loc.String())
	return loc
}

// authorize follows the provider's redirects from authorize to its login
// page, signs in as username and follows the redirects until the one to
// the dashboard's callback, which it returns without requesting it.
func (b *browser) authorize(f *fixture, authorize *url.URL, username string) *url.URL {
	b.t.Helper()
	u := authorize
	for !strings.HasPrefix(u.Path, "/login") {
		u = b.next(b.get(u.String()), u)
	}
	page := b.get(u.String())
	require.Equal(b.t, http.StatusOK, page.StatusCode)
	resp, err := oidctest.Login(b.c, u, username)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	u = b.next(resp, u)
	for !strings.HasPrefix(u.String(), f.dash.URL+"/") {
		u = b.next(b.get(u.String()), u)
	}
	require.Equal(b.t, "/ui/sso/callback", u.Path)
	return u
}

// next is where resp, an answer to from, redirects.
func (b *browser) next(resp *http.Response, from *url.URL) *url.URL {
	b.t.Helper()
	require.Equal(b.t, http.StatusFound, resp.StatusCode, "from %s", from)
	loc, err := resp.Location()
	require.NoError(b.t, err)
	return loc
}

// callback requests the dashboard's callback and decodes its answer.
func (b *browser) callback(u *url.URL) (int, result) {
	b.t.Helper()
	resp := b.get(u.String())
	var res result
	require.NoError(b.t, json.NewDecoder(resp.Body).Decode(&res))
	return resp.StatusCode, res
}

// signIn is a whole sign-in as username, returning to next.
func (b *browser) signIn(f *fixture, next, username string) (int, result) {
	b.t.Helper()
	return b.callback(b.authorize(f, b.begin(f, next), username))
}

// TestSignIn: a sign-in through the real provider gives the identity its
// ID token vouches for, with the strongest role its groups map to, and
// the page to return to.
func TestSignIn(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{}, nil)
	b := newBrowser(t)

	auth := b.begin(f, "/ui/messages?q=x")
	q := auth.Query()
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.NotEmpty(t, q.Get("code_challenge"))
	require.NotEmpty(t, q.Get("state"))
	require.NotEmpty(t, q.Get("nonce"))
	require.ElementsMatch(t, []string{"openid", "email", "profile", "groups"}, strings.Fields(q.Get("scope")))

	status, res := b.callback(b.authorize(f, auth, "alice"))
	require.Equal(t, http.StatusOK, status, res.Message)
	require.Equal(t, "/ui/messages?q=x", res.ReturnTo)
	require.Equal(t, sso.Identity{
		Subject: "alice",
		Issuer:  f.provider.Issuer,
		Email:   "alice@example.com",
		Name:    "Alice",
		Groups:  []string{"ops-support", "ops-owners", "everyone"},
		Role:    access.Owner,
	}, res.Identity)

	status, res = newBrowser(t).signIn(f, "", "sam")
	require.Equal(t, http.StatusOK, status, res.Message)
	require.Equal(t, access.Support, res.Identity.Role)
	require.Empty(t, res.ReturnTo)
}

// TestFlowCookie: Begin's cookie is HttpOnly, SameSite=Lax and sent only
// to the callback; Finish ends it.
func TestFlowCookie(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{}, nil)
	b := newBrowser(t)
	resp := b.get(f.dash.URL + "/ui/sso/login")
	require.Len(t, resp.Cookies(), 1)
	ck := resp.Cookies()[0]
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
	require.Equal(t, "/ui/sso/callback", ck.Path)
	require.Positive(t, ck.MaxAge)
	require.False(t, ck.Secure, "http on loopback")

	loc, err := resp.Location()
	require.NoError(t, err)
	cb := b.authorize(f, loc, "alice")
	resp = b.get(cb.String())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	require.Negative(t, resp.Cookies()[0].MaxAge, "Finish ends the cookie")
}

// TestGroupsFromUserinfo: a provider that keeps the groups out of the ID
// token has them read from its userinfo endpoint.
func TestGroupsFromUserinfo(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{GroupsInUserinfoOnly: true}, nil)
	status, res := newBrowser(t).signIn(f, "/ui/", "alice")
	require.Equal(t, http.StatusOK, status, res.Message)
	require.Equal(t, access.Owner, res.Identity.Role)
	require.Equal(t, []string{"ops-support", "ops-owners", "everyone"}, res.Identity.Groups)
}

// TestRefused: people the rules do not admit are refused with 403 and a
// message that says why.
func TestRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, user string
		edit       func(*sso.Config)
		message    string
	}{
		{"email domain", "olga", nil, "accounts of other.example may not sign in here"},
		{"no allowed group", "mark", func(c *sso.Config) { c.AllowedGroups = []string{"ops-owners", "ops-support"} }, "you are in none of the groups allowed to sign in here"},
		{"no role", "mark", nil, "none of your groups gives a role here"},
		{"unverified email", "una", nil, "your email address una@example.com is not verified at the identity provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, oidctest.Options{}, tc.edit)
			status, res := newBrowser(t).signIn(f, "/ui/", tc.user)
			require.Equal(t, http.StatusForbidden, status)
			require.Equal(t, hookrelay.EFORBIDDEN, res.Code)
			require.Contains(t, res.Message, tc.message)
		})
	}
}

// TestAdmittedByRules: the rules' other sides admit: a default role for
// users in no mapped group, unverified email when allowed, any domain
// when none is listed.
func TestAdmittedByRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, user string
		edit       func(*sso.Config)
		role       access.Role
	}{
		{"default role", "mark", func(c *sso.Config) { c.DefaultRole = access.Viewer }, access.Viewer},
		{"unverified email allowed", "una", func(c *sso.Config) { c.AllowUnverifiedEmail = true }, access.Owner},
		{"any domain", "olga", func(c *sso.Config) { c.AllowedDomains = nil }, access.Owner},
		{"allowed group", "sam", func(c *sso.Config) { c.AllowedGroups = []string{"ops-support"} }, access.Support},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, oidctest.Options{}, tc.edit)
			status, res := newBrowser(t).signIn(f, "/ui/", tc.user)
			require.Equal(t, http.StatusOK, status, res.Message)
			require.Equal(t, tc.role, res.Identity.Role)
		})
	}
}

// TestState: a callback whose state is not the one this browser's
// sign-in began with, or that has no state or no cookie, is refused
// before any code is exchanged.
func TestState(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{}, nil)

	t.Run("tampered at the provider", func(t *testing.T) {
		b := newBrowser(t)
		auth := b.begin(f, "/ui/")
		q := auth.Query()
		q.Set("state", "forged-"+q.Get("state"))
		auth.RawQuery = q.Encode()
		status, res := b.callback(b.authorize(f, auth, "alice"))
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, res.Message, "does not match the one this browser began")
	})
	t.Run("missing", func(t *testing.T) {
		b := newBrowser(t)
		cb := b.authorize(f, b.begin(f, "/ui/"), "alice")
		q := cb.Query()
		q.Del("state")
		cb.RawQuery = q.Encode()
		status, res := b.callback(cb)
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, res.Message, "does not match the one this browser began")
	})
	t.Run("another browser", func(t *testing.T) {
		cb := newBrowser(t).authorize(f, newBrowser(t).begin(f, "/ui/"), "alice")
		status, res := newBrowser(t).callback(cb)
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, res.Message, "began in another browser")
	})
	t.Run("swapped between sign-ins", func(t *testing.T) {
		// An attacker's callback (their code and state) in the victim's
		// browser, which began a sign-in of its own: login CSRF.
		victim, attacker := newBrowser(t), newBrowser(t)
		victim.begin(f, "/ui/")
		cb := attacker.authorize(f, attacker.begin(f, "/ui/"), "olga")
		status, res := victim.callback(cb)
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, res.Message, "does not match the one this browser began")
	})
	t.Run("altered cookie", func(t *testing.T) {
		b := newBrowser(t)
		auth := b.begin(f, "/ui/")
		dash, _ := url.Parse(f.dash.URL + "/ui/sso/callback")
		ck := b.c.Jar.Cookies(dash)
		require.Len(t, ck, 1)
		v := []byte(ck[0].Value)
		v[len(v)/2] ^= 1
		b.c.Jar.SetCookies(dash, []*http.Cookie{{Name: ck[0].Name, Value: string(v), Path: "/ui/sso/callback"}})
		status, res := b.callback(b.authorize(f, auth, "alice"))
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, res.Message, "sign in again")
	})
	t.Run("provider error", func(t *testing.T) {
		status, res := newBrowser(t).callback(mustParse(t, f.dash.URL+"/ui/sso/callback?error=access_denied&error_description=%3Cscript%3E&state=x"))
		require.Equal(t, http.StatusUnauthorized, status)
		require.Equal(t, "the identity provider did not sign you in (access_denied)", res.Message)
	})
}

// TestReplayedCode: a code serves once. The same callback again, with the
// sign-in's cookie put back, is refused by the provider.
func TestReplayedCode(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{}, nil)
	b := newBrowser(t)
	cb := b.authorize(f, b.begin(f, "/ui/"), "alice")
	dash := mustParse(t, f.dash.URL+"/ui/sso/callback")
	saved := b.c.Jar.Cookies(dash)
	require.Len(t, saved, 1)

	status, res := b.callback(cb)
	require.Equal(t, http.StatusOK, status, res.Message)
	require.Empty(t, b.c.Jar.Cookies(dash), "Finish ended the cookie")

	b.c.Jar.SetCookies(dash, []*http.Cookie{{Name: saved[0].Name, Value: saved[0].Value, Path: "/ui/sso/callback"}})
	status, res = b.callback(cb)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "the identity provider refused the sign-in code; sign in again", res.Message)
	var re *oauth2.RetrieveError
	require.ErrorAs(t, f.err(), &re)
	require.Equal(t, "invalid_grant", re.ErrorCode)
}

// TestNonce: an ID token whose nonce is not the one this sign-in sent (the
// authorization request altered on its way to the provider) is refused.
func TestNonce(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{}, nil)
	b := newBrowser(t)
	auth := b.begin(f, "/ui/")
	q := auth.Query()
	q.Set("nonce", "attacker-chosen-nonce")
	auth.RawQuery = q.Encode()
	status, res := b.callback(b.authorize(f, auth, "alice"))
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "the ID token was not issued for this sign-in; sign in again", res.Message)
}

// TestPKCE: the provider exchanges the code only with the verifier whose
// challenge the sign-in sent; Finish, which has it, then succeeds.
func TestPKCE(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{}, nil)
	b := newBrowser(t)
	cb := b.authorize(f, b.begin(f, "/ui/"), "alice")
	code := cb.Query().Get("code")
	require.NotEmpty(t, code)

	conf := oauth2.Config{
		ClientID:     f.cfg.ClientID,
		ClientSecret: f.cfg.ClientSecret,
		RedirectURL:  f.cfg.RedirectURL,
		Endpoint:     oauth2.Endpoint{TokenURL: f.provider.Issuer + "/oauth/token"},
	}
	for name, opts := range map[string][]oauth2.AuthCodeOption{
		"no verifier":    nil,
		"wrong verifier": {oauth2.VerifierOption(oauth2.GenerateVerifier())},
	} {
		_, err := conf.Exchange(t.Context(), code, opts...)
		var re *oauth2.RetrieveError
		require.ErrorAs(t, err, &re, name)
		require.Contains(t, []string{"invalid_grant", "invalid_request"}, re.ErrorCode, name)
	}

	status, res := b.callback(cb)
	require.Equal(t, http.StatusOK, status, res.Message)
	require.Equal(t, access.Owner, res.Identity.Role)
}

// TestReturnTo: Begin takes only a path of this site to return to; any
// other target is refused and starts nothing.
func TestReturnTo(t *testing.T) {
	t.Parallel()
	f := setup(t, oidctest.Options{}, nil)
	for _, next := range []string{
		"https://evil.example/", "//evil.example/ui/", `/\evil.example`, "javascript:alert(1)",
		"evil.example", "/ui/\r\nLocation: https://evil.example", "http:/evil.example",
		"/ui/messages?q=" + strings.Repeat("a", 1100),
	} {
		resp := newBrowser(t).get(f.dash.URL + "/ui/sso/login?next=" + url.QueryEscape(next))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, next)
		require.Empty(t, resp.Header.Get("Location"), next)
		require.Empty(t, resp.Cookies(), next)
		require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(f.err()))
	}
	for _, next := range []string{"/ui/", "/ui/messages?q=a%20b#top", "/"} {
		require.True(t, sso.IsLocalPath(next), next)
	}
}

// TestProviderDown: with the provider unreachable, Begin says so (503)
// rather than failing the dashboard's start.
func TestProviderDown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c, err := sso.New(sso.Config{Issuer: srv.URL, ClientID: "x", ClientSecret: "y", RedirectURL: "http://127.0.0.1:1/ui/sso/callback"})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	err = c.Begin(rec, httptest.NewRequest("GET", "/ui/sso/login", nil), "")
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(err))
	require.Equal(t, "the identity provider cannot be reached; try again later", hookrelay.ErrorMessage(err))
	require.Empty(t, rec.Result().Cookies())
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(c.Discover(t.Context())))
}

func mustParse(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// TestIDTokenChecks: an ID token that expired is refused; so is a sign-in
// that took longer than its cookie lives, and a provider whose discovery
// names another issuer than the configured one.
func TestIDTokenChecks(t *testing.T) {
	t.Parallel()
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		f := setup(t, oidctest.Options{}, nil)
		b := newBrowser(t)
		cb := b.authorize(f, b.begin(f, "/ui/"), "alice")
		f.ahead.Store(int64(6 * time.Minute)) // the provider's ID tokens live 5 minutes
		status, res := b.callback(cb)
		require.Equal(t, http.StatusUnauthorized, status)
		require.Equal(t, "the identity provider's ID token does not verify", res.Message)
		var expired *oidc.TokenExpiredError
		require.ErrorAs(t, f.err(), &expired)
	})
	t.Run("slow sign-in", func(t *testing.T) {
		t.Parallel()
		f := setup(t, oidctest.Options{}, nil)
		b := newBrowser(t)
		cb := b.authorize(f, b.begin(f, "/ui/"), "alice")
		f.ahead.Store(int64(11 * time.Minute)) // the sign-in cookie lives 10
		status, res := b.callback(cb)
		require.Equal(t, http.StatusUnauthorized, status)
		require.Equal(t, "the sign-in expired or began in another browser; sign in again", res.Message)
	})
	t.Run("issuer", func(t *testing.T) {
		t.Parallel()
		f := setup(t, oidctest.Options{Host: "localhost"}, func(c *sso.Config) {
			c.Issuer = strings.Replace(c.Issuer, "localhost", "127.0.0.1", 1)
		})
		resp := newBrowser(t).get(f.dash.URL + "/ui/sso/login")
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(f.err()))
		require.Equal(t, fmt.Sprintf("the identity provider's issuer is %q, not the configured %q", f.provider.Issuer, f.cfg.Issuer), hookrelay.ErrorMessage(f.err()))
	})
}
