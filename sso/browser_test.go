package sso_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/internal/oidctest"
	"github.com/hookrelay/hookrelay/sso"
)

// chromiumPath is Debian's chromium; scripts/browser-deps.sh installs it.
const chromiumPath = "/usr/bin/chromium"

// TestBrowserSignIn signs in with chromium through the real provider, on
// another site (localhost) than the dashboard (127.0.0.1), as in a real
// deployment. The dashboard's session cookie is SameSite=Strict: set at the
// callback, which a cross-site redirect chain reaches, it reaches the next
// page through Continue's same-site navigation, and not through a 302,
// which is why the callback answers with Continue.
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("browser tests need %s (run scripts/browser-deps.sh): %v", chromiumPath, err)
	}
	var client *sso.Client
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/sso/login", func(w http.ResponseWriter, r *http.Request) {
		if err := client.Begin(w, r, r.URL.Query().Get("next")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("GET /ui/sso/callback", func(w http.ResponseWriter, r *http.Request) {
		id, returnTo, err := client.Finish(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: id.Email + "|" + id.Role.String(), Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		if r.URL.Query().Has("redirect") { // the provider never adds it: the test does, below
			http.Redirect(w, r, returnTo, http.StatusFound)
			return
		}
		sso.Continue(w, returnTo)
	})
	mux.HandleFunc("GET /ui/whoami", func(w http.ResponseWriter, r *http.Request) {
		who := "anonymous"
		if c, err := r.Cookie("session"); err == nil {
			who = c.Value
		}
		_, _ = w.Write([]byte(`<!doctype html><p id="who">` + strings.ReplaceAll(who, "<", "") + `</p>`))
	})
	// The dashboard's security headers (web/render.go), so that Continue's
	// page is tried under its CSP.
	dash := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(dash.Close)
	provider := oidctest.Start(t, oidctest.Options{Host: "localhost", Users: users,
		RedirectURIs: []string{dash.URL + "/ui/sso/callback", dash.URL + "/ui/sso/callback?redirect=1"}})
	require.True(t, strings.HasPrefix(provider.Issuer, "http://localhost:"))
	signIn := func(redirectURL string) string {
		var err error
		client, err = sso.New(sso.Config{
			Issuer: provider.Issuer, ClientID: provider.ClientID, ClientSecret: provider.ClientSecret,
			RedirectURL: redirectURL,
			RoleMap:     map[string]access.Role{"ops-owners": access.Owner},
		})
		require.NoError(t, err)
		bctx := newChromium(t)
		ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		var who string
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(dash.URL+"/ui/sso/login?next=/ui/whoami"),
			chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "alice"),
			chromedp.Click(chromedp.CSS("button")),
			chromedp.WaitVisible(chromedp.CSS("#who")),
		))
		who, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#who")))
		require.NoError(t, err)
		return strings.TrimSpace(who)
	}
	require.Equal(t, "alice@example.com|owner", signIn(dash.URL+"/ui/sso/callback"), "after Continue")
	require.Equal(t, "anonymous", signIn(dash.URL+"/ui/sso/callback?redirect=1"), "after a 302 the Strict cookie stays behind")
}

// newChromium starts a headless chromium with a fresh profile.
func newChromium(t *testing.T) context.Context {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(bctx), "start chromium")
	return bctx
}
