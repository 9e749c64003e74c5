package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
)

var resetURLRe = regexp.MustCompile(`id="reset-url">([^<]+)<`)

// passwordLogin logs c in as email and reports the answer's status.
func passwordLogin(t *testing.T, c *uiClient, email, password, code string) int {
	t.Helper()
	_, page := c.do("GET", "/ui/login", nil)
	resp, _ := c.do("POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "email": {email}, "password": {password}, "code": {code}})
	return resp.StatusCode
}

// signedIn reports whether c's session opens the overview.
func signedIn(t *testing.T, c *uiClient) bool {
	t.Helper()
	resp, _ := c.do("GET", "/ui/", nil)
	return resp.StatusCode == http.StatusOK
}

// resetWith opens a reset link and submits it with password and, when
// enrol, the code of the page's fresh TOTP secret; it returns the answer's
// status and the secret.
func resetWith(t *testing.T, c *uiClient, link, password string, enrol bool) (int, string) {
	t.Helper()
	resp, page := c.do("GET", link, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "Leave the code empty to sign in with the password alone: that removes two-step sign-in")
	secret := totpSecretRe.FindStringSubmatch(page)[1]
	u, err := url.Parse(link)
	require.NoError(t, err)
	form := url.Values{"csrf": {csrfOf(t, page)}, "token": {u.Query().Get("token")}, "totp_secret": {secret}, "password": {password}}
	if enrol {
		code, err := access.TOTPCode(secret, time.Now())
		require.NoError(t, err)
		form.Set("code", code)
	}
	resp, _ = c.do("POST", "/ui/reset", form)
	return resp.StatusCode, secret
}

// A reset link from the Users page: the new password works and the old
// one stops, every earlier session ends at once and the user's API token
// stays, the link works once; a second link re-enrols TOTP, a third one
// removes it; both kinds of entry are in the audit log.
func TestUserResetAccept(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ada, err := f.store.UserCreate(t.Context(), db.NewUser{Email: "ada@example.com", Name: "Ada", Role: access.Operator,
		PasswordHash: access.HashPassword("old password 123"), AuthSource: db.AuthPassword, Now: time.Now()})
	require.NoError(t, err)
	lin, err := f.store.UserCreate(t.Context(), db.NewUser{Email: "lin@example.com", Role: access.Viewer, AuthSource: db.AuthSSO, Now: time.Now()})
	require.NoError(t, err)
	id := strconv.FormatInt(ada.ID, 10)

	// Two sessions of Ada's, and a token of hers.
	c1, c2 := newUIClient(t, f.URL), newUIClient(t, f.URL)
	for _, c := range []*uiClient{c1, c2} {
		require.Equal(t, http.StatusSeeOther, passwordLogin(t, c, "ada@example.com", "old password 123", ""))
	}
	_, page := c1.do("GET", "/ui/tokens", nil)
	resp, page := c1.do("POST", "/ui/tokens", url.Values{"csrf": {csrfOf(t, page)}, "name": {"laptop"}, "role": {"viewer"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	apiToken := newTokenRe.FindStringSubmatch(page)[1]

	// The owner's Users page: a reset button for active password users only.
	owner := newUIClient(t, f.URL)
	csrf := owner.login(testAdminToken)
	_, page = owner.do("GET", "/ui/users", nil)
	require.Contains(t, page, `id="reset-`+id+`"`)
	require.NotContains(t, page, `id="reset-`+strconv.FormatInt(lin.ID, 10)+`"`, "a single sign-on user has no password here")
	resp, page = owner.do("POST", "/ui/users/"+id+"/reset", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "ada@example.com (it works once")
	link, err := url.Parse(strings.ReplaceAll(resetURLRe.FindStringSubmatch(page)[1], "&amp;", "&"))
	require.NoError(t, err)
	require.Equal(t, "/ui/reset", link.Path)

	// Accepted with TOTP: the old sessions end at once, the new one opens.
	late := newUIClient(t, f.URL)
	_, latePage := late.do("GET", link.RequestURI(), nil)
	me := newUIClient(t, f.URL)
	st, _ := resetWith(t, me, link.RequestURI(), "short", false)
	require.Equal(t, http.StatusBadRequest, st, "too short a password")
	st, secret := resetWith(t, me, link.RequestURI(), "new password 456", true)
	require.Equal(t, http.StatusSeeOther, st)
	require.True(t, signedIn(t, me))
	require.False(t, signedIn(t, c1), "an earlier session ends at once")
	require.False(t, signedIn(t, c2), "an earlier session ends at once")
	st, _ = teamAPI(t, f.URL, http.MethodGet, "/v1/stats", apiToken, nil)
	require.Equal(t, http.StatusOK, st, "the user's API tokens stay")

	// The link works once.
	resp, _ = me.do("GET", link.RequestURI(), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = late.do("POST", "/ui/reset", url.Values{"csrf": {csrfOf(t, latePage)}, "token": {link.Query().Get("token")},
		"password": {"another password 789"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a form opened before the link was used")

	// The old password stops; the new one needs the new code.
	require.Equal(t, http.StatusUnauthorized, passwordLogin(t, newUIClient(t, f.URL), "ada@example.com", "old password 123", ""))
	require.Equal(t, http.StatusUnauthorized, passwordLogin(t, newUIClient(t, f.URL), "ada@example.com", "new password 456", ""), "TOTP is enrolled")
	code, err := access.TOTPCode(secret, time.Now().Add(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, http.StatusSeeOther, passwordLogin(t, newUIClient(t, f.URL), "ada@example.com", "new password 456", code))

	// A reset with the code left empty removes TOTP.
	st2, out := teamAPI(t, f.URL, http.MethodPost, "/v1/users/"+id+"/reset", testAdminToken, nil)
	require.Equal(t, http.StatusCreated, st2, "%v", out)
	again, err := url.Parse(out["reset_url"].(string))
	require.NoError(t, err)
	st, _ = resetWith(t, newUIClient(t, f.URL), again.RequestURI(), "third password 789", false)
	require.Equal(t, http.StatusSeeOther, st)
	require.False(t, signedIn(t, me), "the session of the first reset ended with the second")
	require.Equal(t, http.StatusSeeOther, passwordLogin(t, newUIClient(t, f.URL), "ada@example.com", "third password 789", ""))
	st, users := teamAPI(t, f.URL, http.MethodGet, "/v1/users", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, false, users["items"].([]any)[0].(map[string]any)["totp"])

	// A link of a user deactivated since it was made does not apply.
	st2, out = teamAPI(t, f.URL, http.MethodPost, "/v1/users/"+id+"/reset", testAdminToken, nil)
	require.Equal(t, http.StatusCreated, st2, "%v", out)
	third, err := url.Parse(out["reset_url"].(string))
	require.NoError(t, err)
	st2, _ = teamAPI(t, f.URL, http.MethodPost, "/v1/users/"+id+"/deactivate", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st2)
	resp, page = newUIClient(t, f.URL).do("GET", third.RequestURI(), nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, page)

	issued := auditExport(t, f.URL, url.Values{"action": {"user.reset"}})
	require.Len(t, issued, 3)
	accepted := auditExport(t, f.URL, url.Values{"action": {"user.password_reset"}})
	require.Len(t, accepted, 2)
	for i, totp := range []bool{true, false} {
		e := accepted[i]
		require.Equal(t, "user", e["actor"].(map[string]any)["kind"])
		require.Equal(t, id, e["actor"].(map[string]any)["user_id"])
		require.Equal(t, id, e["target_id"])
		require.Equal(t, totp, e["after"].(map[string]any)["two_step"])
	}
}
