// Package oidctest runs a real OpenID provider on loopback for tests: the
// OpenID Certified provider implementation of github.com/zitadel/oidc
// (pkg/op) over a small in-memory storage of this package, with one
// confidential client, a few users, the authorization code flow with
// PKCE, and a signing key made at start. Its login step is a form a test
// submits over HTTP (Login), so a sign-in goes through the same redirects
// and cookies as in a browser.
package oidctest

import (
	"context"
	"crypto/rand"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is a person the provider signs in.
type User struct {
	Username      string // what the login form takes
	Subject       string // "sub"; default Username
	Email         string
	EmailVerified bool
	Name          string
	Groups        []string // the "groups" claim (scope "groups")
}

// Options configure a Provider.
type Options struct {
	// ClientID and ClientSecret are its one client (a confidential web
	// client authenticating with HTTP Basic). Defaults "hookrelay" and
	// "hookrelay-client-secret".
	ClientID, ClientSecret string
	// RedirectURIs are the client's registered redirect URIs.
	RedirectURIs []string
	// Users are the people it signs in.
	Users []User
	// GroupsInUserinfoOnly leaves the groups out of the ID token: only the
	// userinfo endpoint has them, as with some providers.
	GroupsInUserinfoOnly bool
	// Host names the provider in its issuer URL. Default 127.0.0.1;
	// "localhost" makes it another site than a client on 127.0.0.1, as a
	// real provider is (SameSite cookies tell the two apart).
	Host string
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer URL (http://127.0.0.1:PORT), the base of its
	// discovery document.
	Issuer                 string
	ClientID, ClientSecret string
	store                  *storage
}

// Start starts a provider on a free loopback port; it stops when the test
// ends.
func Start(t testing.TB, opts Options) *Provider {
	t.Helper()
	if opts.ClientID == "" {
		opts.ClientID = "hookrelay"
	}
	if opts.ClientSecret == "" {
		opts.ClientSecret = "hookrelay-client-secret"
	}
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	if opts.Host != "" {
		issuer = "http://" + net.JoinHostPort(opts.Host, strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port))
	}
	store, err := newStorage(opts)
	if err != nil {
		t.Fatalf("oidctest: storage: %v", err)
	}
	var key [32]byte
	_, _ = rand.Read(key[:])
	cfg := &op.Config{
		CryptoKey:      key,
		CodeMethodS256: true,
		// The client authenticates with HTTP Basic; a secret in the form
		// is accepted too, as most providers do.
		AuthMethodPost:  true,
		SupportedScopes: []string{"openid", "profile", "email", "groups"},
		SupportedClaims: []string{"sub", "aud", "exp", "iat", "iss", "auth_time", "nonce", "email", "email_verified", "name", "groups"},
	}
	provider, err := op.NewProvider(cfg, store, op.StaticIssuer(issuer), op.WithAllowInsecure()) // http on loopback
	if err != nil {
		t.Fatalf("oidctest: provider: %v", err)
	}
	l := &login{store: store, callback: op.AuthCallbackURL(provider)}
	mux := http.NewServeMux()
	mux.Handle(loginPath, op.NewIssuerInterceptor(provider.IssuerFromRequest).Handler(l))
	mux.Handle("/", provider)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return &Provider{Issuer: issuer, ClientID: opts.ClientID, ClientSecret: opts.ClientSecret, store: store}
}

// loginPath is the provider's login page: the authorize endpoint sends the
// browser there with the id of the authorization request.
const loginPath = "/login"

// LoginURL returns the provider's login page (Login submits it).
func (p *Provider) LoginURL() string { return p.Issuer + loginPath }

// login is the provider's login step: a form with the request's id and a
// username. Submitting the name of a known user signs them in (no password:
// this provider exists for tests) and sends the browser to the provider's
// authorize callback, which redirects to the client with a code.
type login struct {
	store    *storage
	callback func(ctx context.Context, id string) string
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<title>Sign in</title>
<form method="post" action="/login">
<input type="hidden" name="id" value="{{.}}">
<label>Username <input name="username" autofocus></label>
<button>Sign in</button>
</form>
`))

func (l *login) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		id := r.URL.Query().Get("id")
		if !l.store.hasAuthRequest(id) {
			http.Error(w, "unknown authorization request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = loginPage.Execute(w, id)
	case http.MethodPost:
		id, username := r.PostFormValue("id"), r.PostFormValue("username")
		if err := l.store.signIn(id, username); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// Login submits the provider's login form at page (the URL the authorize
// endpoint redirected to) as username, with client (its cookie jar and
// redirect policy are the caller's), and returns the answer.
func Login(client *http.Client, page *url.URL, username string) (*http.Response, error) {
	form := url.Values{"id": {page.Query().Get("id")}, "username": {username}}
	return client.PostForm(page.ResolveReference(&url.URL{Path: loginPath}).String(), form)
}
