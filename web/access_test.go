package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/web"
)

// Every page and action of the dashboard declares who may use it.
func TestEveryPageDeclaresWhoMayUseIt(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	n := 0
	for _, r := range f.Routes {
		if !strings.HasPrefix(r.Path, "/ui/") || r.Method == echo.RouteNotFound || (strings.HasSuffix(r.Path, "/*") && r.Path != "/ui/static/*") {
			continue // the API's, the /ui redirect, the groups' catch-alls
		}
		_, _, _, ok := web.PageNeed(f.Dash, r.Method, r.Path)
		require.True(t, ok, "%s %s declares no role", r.Method, r.Path)
		n++
	}
	require.Greater(t, n, 50)
	role, _, _, _ := web.PageNeed(f.Dash, http.MethodGet, "/ui/users")
	require.Equal(t, access.Owner, role)
}

// teamAPI calls the API of the fixture with a bearer token.
func teamAPI(t *testing.T, base, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, base+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

var (
	totpSecretRe = regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`)
	newTokenRe   = regexp.MustCompile(`id="new-token">(hrt_[A-Za-z0-9_-]+)<`)
)

// invite invites email with role through the API and returns the link's path.
func invite(t *testing.T, f webFixture, email, role string) string {
	t.Helper()
	st, out := teamAPI(t, f.URL, http.MethodPost, "/v1/users/invites", testAdminToken, map[string]any{"email": email, "role": role})
	require.Equal(t, http.StatusCreated, st, "%v", out)
	u, err := url.Parse(out["invite_url"].(string))
	require.NoError(t, err)
	return u.RequestURI()
}

// An invitation accepted with TOTP; the login with password and code; a
// role change at the next request; a deactivation ending the session and
// the user's token at once.
func TestUserInviteLoginRoleDeactivation(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	link := invite(t, f, "Ada@Example.com", "viewer")

	c := newUIClient(t, f.URL)
	resp, page := c.do("GET", link, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	secret := totpSecretRe.FindStringSubmatch(page)[1]
	code, err := access.TOTPCode(secret, time.Now())
	require.NoError(t, err)
	token := strings.TrimPrefix(link, "/ui/invite?token=")
	form := url.Values{"csrf": {csrfOf(t, page)}, "token": {token}, "totp_secret": {secret}, "name": {"Ada"}, "password": {"short"}}
	resp, _ = c.do("POST", "/ui/invite", form)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "too short a password")
	_, page = c.do("GET", link, nil)
	form.Set("csrf", csrfOf(t, page))
	form.Set("password", "a long enough password")
	form.Set("code", code)
	resp, _ = c.do("POST", "/ui/invite", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, page = c.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Ada, viewer")
	require.NotContains(t, page, `id="nav-users"`, "a viewer sees no users page")
	resp, _ = c.do("GET", "/ui/dead-letters", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a viewer reads no dead letters")
	resp, _ = c.do("GET", "/ui/users", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	// A viewer's pages render, without the actions it cannot take.
	carrier, _ := dbtest.Carrier(t, f.store, nil)
	dbtest.Endpoint(t, f.store, nil)
	for _, p := range []string{"/ui/carriers/" + strconv.FormatInt(carrier.ID, 10), "/ui/carriers", "/ui/endpoints", "/ui/ops-endpoints", "/ui/event-types", "/ui/database"} {
		resp, page = c.do("GET", p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, page)
		for _, action := range []string{`id="try-form"`, `id="carrier-disable"`, `id="ops-form"`, `id="event-type-new"`, `>Disable</button>`} {
			require.NotContains(t, page, action, p)
		}
	}

	// The invitation works once.
	resp, _ = c.do("GET", link, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// A token of the user's own, of a role no more than theirs.
	resp, page = c.do("GET", "/ui/tokens", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	csrf := csrfOf(t, page)
	resp, _ = c.do("POST", "/ui/tokens", url.Values{"csrf": {csrf}, "name": {"laptop"}, "role": {"operator"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, page = c.do("POST", "/ui/tokens", url.Values{"csrf": {csrf}, "name": {"laptop"}, "role": {"viewer"}, "expires_days": {"30"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	apiToken := newTokenRe.FindStringSubmatch(page)[1]
	st, _ := teamAPI(t, f.URL, http.MethodGet, "/v1/stats", apiToken, nil)
	require.Equal(t, http.StatusOK, st)

	// The role changes at the next request.
	st, users := teamAPI(t, f.URL, http.MethodGet, "/v1/users", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	ada := users["items"].([]any)[0].(map[string]any)
	require.Equal(t, "Ada@Example.com", ada["email"])
	require.Equal(t, true, ada["totp"])
	id := ada["id"].(string)
	st, _ = teamAPI(t, f.URL, http.MethodPatch, "/v1/users/"+id, testAdminToken, map[string]any{"role": "support"})
	require.Equal(t, http.StatusOK, st)
	resp, page = c.do("GET", "/ui/dead-letters", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "support reads dead letters")
	require.NotContains(t, page, `id="retry-selected"`, "but cannot retry them: the page hides the buttons")

	// A login with the password needs the code once enrolled.
	c2 := newUIClient(t, f.URL)
	_, page = c2.do("GET", "/ui/login", nil)
	resp, page = c2.do("POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "email": {"ada@example.com"}, "password": {"a long enough password"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no code")
	// The enrolment's code was used: the next step's (accepted a step
	// early, as clocks drift) logs in, once.
	code, _ = access.TOTPCode(secret, time.Now().Add(30*time.Second))
	login := url.Values{"csrf": {csrfOf(t, page)}, "email": {"ada@example.com"}, "password": {"a long enough password"}, "code": {code}}
	resp, _ = c2.do("POST", "/ui/login", login)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = c2.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	c3 := newUIClient(t, f.URL)
	_, page = c3.do("GET", "/ui/login", nil)
	login.Set("csrf", csrfOf(t, page))
	resp, _ = c3.do("POST", "/ui/login", login)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a code works once")

	// Deactivation ends both sessions and the token at once.
	st, _ = teamAPI(t, f.URL, http.MethodPost, "/v1/users/"+id+"/deactivate", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	for _, cl := range []*uiClient{c, c2} {
		resp, _ = cl.do("GET", "/ui/", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/ui/login", resp.Header.Get("Location"))
	}
	st, _ = teamAPI(t, f.URL, http.MethodGet, "/v1/stats", apiToken, nil)
	require.Equal(t, http.StatusUnauthorized, st)
	code, _ = access.TOTPCode(secret, time.Now().Add(30*time.Second))
	_, page = c2.do("GET", "/ui/login", nil)
	resp, _ = c2.do("POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "email": {"ada@example.com"}, "password": {"a long enough password"}, "code": {code}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a deactivated user cannot log in")
}

// Wrong passwords count against the address like wrong tokens: the login
// form answers 429 once they are too many.
func TestUserLoginThrottled(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	c := newUIClient(t, f.URL)
	_, page := c.do("GET", "/ui/login", nil)
	csrf := csrfOf(t, page)
	var last int
	for i := 0; i < 20 && last != http.StatusTooManyRequests; i++ {
		resp, page := c.do("POST", "/ui/login", url.Values{"csrf": {csrf}, "email": {"nobody@example.com"}, "password": {"wrong password"}})
		last = resp.StatusCode
		csrf = csrfOf(t, page) // each answer renders the form anew
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, last)
	}
	require.Equal(t, http.StatusTooManyRequests, last)
}

// A single sign-on identity: a user made just in time with the mapped
// role (auth source sso), found again by email (whatever its case) the
// next time, and refused once deactivated.
func TestSSOSession(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	sso := func(email string, role access.Role) (*httptest.ResponseRecorder, error) {
		e := echo.New()
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/ui/sso/callback", nil), rec)
		return rec, web.StartSSOSession(f.Dash, c, email, "Lin", role)
	}
	rec, err := sso("lin@example.com", access.Support)
	require.NoError(t, err)
	require.NotEmpty(t, rec.Result().Cookies(), "the session's cookie is set; the caller answers")

	// The cookie opens the dashboard with the mapped role.
	c := newUIClient(t, f.URL)
	u, _ := url.Parse(f.URL + "/ui/")
	c.hc.Jar.SetCookies(u, rec.Result().Cookies())
	resp, page := c.do("GET", "/ui/dead-letters", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Lin, support")

	_, err = sso("LIN@example.com", access.Viewer)
	require.NoError(t, err, "the same user: found by email")
	st, users := teamAPI(t, f.URL, http.MethodGet, "/v1/users", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	items := users["items"].([]any)
	require.Len(t, items, 1)
	lin := items[0].(map[string]any)
	require.Equal(t, "sso", lin["auth_source"])
	require.Equal(t, "support", lin["role"], "the role is set when the user is made; owners change it after")

	st, _ = teamAPI(t, f.URL, http.MethodPost, "/v1/users/"+lin["id"].(string)+"/deactivate", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	_, err = sso("lin@example.com", access.Support)
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, hookrelay.HTTPStatus(err))
	resp, _ = c.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the session ended with the deactivation")

	// An SSO user cannot log in with a password.
	_, page = c.do("GET", "/ui/login", nil)
	resp, _ = c.do("POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "email": {"lin@example.com"}, "password": {""}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// Each role against every operator page and action of the dashboard: below
// the declared role 403; at or above it never 401 or 403 (the answer is
// the handler's: 404 for the unknown ids used here, 400 for empty forms).
func TestRolesAgainstEveryPage(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	clients := map[access.Role]*uiClient{}
	csrf := map[access.Role]string{}
	for _, r := range access.Roles() {
		e := echo.New()
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
		require.NoError(t, web.StartSSOSession(f.Dash, c, r.String()+"@example.com", r.String(), r))
		cl := newUIClient(t, f.URL)
		u, _ := url.Parse(f.URL + "/ui/")
		cl.hc.Jar.SetCookies(u, rec.Result().Cookies())
		_, page := cl.do("GET", "/ui/tokens", nil)
		clients[r], csrf[r] = cl, csrfOf(t, page)
	}
	for _, route := range web.PageRoutes(f.Dash) {
		method, path, _ := strings.Cut(route, " ")
		need, _, _, _ := web.PageNeed(f.Dash, method, path)
		path = strings.ReplaceAll(path, ":id", "999999")
		for _, r := range access.Roles() {
			var form url.Values
			if method == http.MethodPost {
				form = url.Values{"csrf": {csrf[r]}}
			}
			resp, page := clients[r].do(method, path, form)
			if !r.Allows(need) {
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s as %s", route, r)
				continue
			}
			require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, "%s as %s: %s", route, r, page)
		}
	}
}

// A user scoped to one merchant sees its endpoints only, on the endpoints
// page, and not another merchant's messages.
func TestScopedUserDashboard(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m1, _ := dbtest.Merchant(t, f.store, nil)
	m2, _ := dbtest.Merchant(t, f.store, nil)
	dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m1.ID, URL: "http://127.0.0.1:9/mine"})
	dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m2.ID, URL: "http://127.0.0.1:9/theirs"})

	e := echo.New()
	rec := httptest.NewRecorder()
	require.NoError(t, web.StartSSOSession(f.Dash, e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec), "scoped@example.com", "", access.Operator))
	st, users := teamAPI(t, f.URL, http.MethodGet, "/v1/users", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	id := users["items"].([]any)[0].(map[string]any)["id"].(string)
	st, out := teamAPI(t, f.URL, http.MethodPatch, "/v1/users/"+id, testAdminToken, map[string]any{"scope": map[string]any{"merchants": []int64{m1.ID}}})
	require.Equal(t, http.StatusOK, st, "%v", out)

	c := newUIClient(t, f.URL)
	u, _ := url.Parse(f.URL + "/ui/")
	c.hc.Jar.SetCookies(u, rec.Result().Cookies())
	resp, page := c.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "/mine")
	require.NotContains(t, page, "/theirs")
}
