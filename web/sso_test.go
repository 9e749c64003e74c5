package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/internal/oidctest"
	"github.com/hookrelay/hookrelay/sso"
)

// Single sign-on through the dashboard against a real OpenID provider: the
// login page offers it; a user in a mapped group signs in, is made just in
// time with the group's role and sees the dashboard as that role; the login
// is in the audit log under the user; a user in no mapped group is refused
// and recorded as a failed login.
func TestSSOSignInThroughProvider(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{SSO: func(base string) *sso.Config {
		p := oidctest.Start(t, oidctest.Options{
			RedirectURIs: []string{base + "/ui/sso/callback"},
			Users: []oidctest.User{
				{Username: "mei", Email: "mei@example.com", EmailVerified: true, Name: "Mei", Groups: []string{"ops-support"}},
				{Username: "bob", Email: "bob@example.com", EmailVerified: true, Name: "Bob", Groups: []string{"marketing"}},
			},
		})
		return &sso.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
			RedirectURL: base + "/ui/sso/callback", RoleMap: map[string]access.Role{"ops-support": access.Support}}
	}})

	get := func(hc *http.Client, u string) (*http.Response, string) {
		t.Helper()
		resp, err := hc.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	signIn := func(username string) (*http.Client, *http.Response, string) {
		t.Helper()
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		hc := &http.Client{Jar: jar}
		_, page := get(hc, f.URL+"/ui/login")
		require.Contains(t, page, `id="sso-login"`, "the login page offers single sign-on")
		// To the provider's login form, through its authorize endpoint.
		resp, _ := get(hc, f.URL+"/ui/sso/login?next=/ui/dead-letters")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotEqual(t, f.URL, "http://"+resp.Request.URL.Host, "the browser is at the provider")
		// Its answer redirects back to the dashboard's callback.
		resp, err = oidctest.Login(hc, resp.Request.URL, username)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "/ui/sso/callback", resp.Request.URL.Path)
		return hc, resp, string(b)
	}

	hc, resp, page := signIn("mei")
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "/ui/dead-letters", "the page goes on to where the sign-in began")
	resp, page = get(hc, f.URL+"/ui/dead-letters")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Mei, support")
	resp, _ = get(hc, f.URL+"/ui/users")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "support is not an owner")

	st, users := teamAPI(t, f.URL, http.MethodGet, "/v1/users", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, users["items"], 1)
	mei := users["items"].([]any)[0].(map[string]any)
	require.Equal(t, "mei@example.com", mei["email"])
	require.Equal(t, "support", mei["role"])
	require.Equal(t, "sso", mei["auth_source"])

	_, resp, page = signIn("bob")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, page)

	q := url.Values{"action": {"login"}}
	entries := auditExport(t, f.URL, q)
	require.NotEmpty(t, entries)
	last := entries[len(entries)-1]
	require.Equal(t, "user", last["actor"].(map[string]any)["kind"])
	require.Equal(t, "mei@example.com", last["actor"].(map[string]any)["name"])
	failed := auditExport(t, f.URL, url.Values{"action": {"login.failed"}})
	require.Len(t, failed, 1, "bob's refusal is recorded")
	created := auditExport(t, f.URL, url.Values{"action": {"user.create"}})
	require.Len(t, created, 1)
}

// auditExport returns the audit log's entries that match q (GET
// /v1/audit-log with the admin token), oldest first.
func auditExport(t *testing.T, base string, q url.Values) []map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/audit-log?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out []map[string]any
	dec := json.NewDecoder(resp.Body)
	for dec.More() {
		var e map[string]any
		require.NoError(t, dec.Decode(&e))
		out = append(out, e)
	}
	return out
}
