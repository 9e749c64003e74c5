package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

var secCSRFField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// secUISession is a browser-like client of the dashboard: it keeps the session
// cookie and never follows redirects.
type secUISession struct {
	t      *testing.T
	base   string
	client *http.Client
	cookie *http.Cookie // hr_session; nil when logged out
}

func (s *secUISession) do(method, path string, form url.Values) (int, string, *http.Response) {
	s.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.base+path, body)
	require.NoError(s.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if s.cookie != nil {
		req.AddCookie(s.cookie)
	}
	resp, err := s.client.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp
}

// secUIClient returns a client that does not follow redirects; its idle
// connections are closed when the test ends.
func secUIClient(t *testing.T) *http.Client {
	c := &http.Client{
		Transport:     apitest.Wrap(t, &http.Transport{}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// secUILogin logs in with token through the login form (double-submit CSRF)
// and returns the session; it checks the cookie flags on the way.
func secUILogin(t *testing.T, base, token string) *secUISession {
	t.Helper()
	s := &secUISession{t: t, base: base, client: secUIClient(t)}
	st, page, resp := s.do("GET", "/ui/login", nil)
	require.Equal(t, http.StatusOK, st)
	var login *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "hr_login" {
			login = c
		}
	}
	require.NotNil(t, login, "login form without its CSRF cookie")
	m := secCSRFField.FindStringSubmatch(page)
	require.NotNil(t, m, "login form without a csrf field")

	// Without the CSRF cookie the login is refused.
	st, _, _ = s.do("POST", "/ui/login", url.Values{"csrf": {m[1]}, "token": {token}})
	require.Equal(t, http.StatusForbidden, st, "login without the CSRF cookie")

	s.cookie = login
	st, _, resp = s.do("POST", "/ui/login", url.Values{"csrf": {m[1]}, "token": {token}})
	require.Equal(t, http.StatusSeeOther, st, "login")
	s.cookie = nil
	for _, c := range resp.Cookies() {
		if c.Name == "hr_session" && c.Value != "" {
			s.cookie = c
		}
	}
	require.NotNil(t, s.cookie, "no session cookie after login")
	require.True(t, s.cookie.HttpOnly, "session cookie is not HttpOnly")
	require.Contains(t, []http.SameSite{http.SameSiteStrictMode, http.SameSiteLaxMode}, s.cookie.SameSite, "session cookie SameSite")
	require.Equal(t, "/ui", s.cookie.Path)
	require.NotContains(t, s.cookie.Value, token, "the session cookie carries the token")
	return s
}

// csrf returns the CSRF token of the session from the page at path.
func (s *secUISession) csrf(path string) string {
	s.t.Helper()
	st, page, _ := s.do("GET", path, nil)
	require.Equal(s.t, http.StatusOK, st, path)
	m := secCSRFField.FindStringSubmatch(page)
	require.NotNil(s.t, m, "no csrf field on %s", path)
	return m[1]
}

// dashboardAuthFixture is a carrier's callback delivered to the endpoints of
// two merchants, A and B.
type dashboardAuthFixture struct {
	webFixture
	merchantA, merchantB string // keys
	endpointA            string // id
	deliveryA            string // id of the delivery to endpointA
	messageID            string // the message of deliveryA
}

func newDashboardAuthFixture(t *testing.T) dashboardAuthFixture {
	t.Helper()
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(sink.Close)
	f := dashboardAuthFixture{webFixture: startWebFixture(t, fixtureOpts{})}
	ma, keyA := dbtest.Merchant(t, f.store, nil)
	mb, keyB := dbtest.Merchant(t, f.store, nil)
	ea, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: ma.ID, URL: sink.URL + "/a"})
	eb, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: mb.ID, URL: sink.URL + "/b"})
	msg := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ea.ID, eb.ID}})
	f.merchantA, f.merchantB = keyA, keyB
	f.endpointA = strconv.FormatInt(ea.ID, 10)
	f.deliveryA = strconv.FormatInt(msg.DeliveryIDs[0], 10)
	f.messageID = strconv.FormatInt(msg.ID, 10)
	return f
}

// TestDashboardAuth checks the dashboard's pages for every kind of visitor,
// the session cookie's flags, and that state-changing forms without the
// session's CSRF token are refused.
func TestDashboardAuth(t *testing.T) {
	t.Parallel()
	f := newDashboardAuthFixture(t)
	anon := &secUISession{t: t, base: f.URL, client: secUIClient(t)}
	admin := secUILogin(t, f.URL, testAdminToken)
	ma := secUILogin(t, f.URL, f.merchantA)
	mb := secUILogin(t, f.URL, f.merchantB)
	bad := &secUISession{t: t, base: f.URL, client: anon.client,
		cookie: &http.Cookie{Name: "hr_session", Value: "eyJraW5kIjoiYWRtaW4ifQ.forged"}}

	type page struct {
		path                     string
		admin, merchantA, merchB int
	}
	pages := []page{
		{"/ui/", 200, 303, 303},
		{"/ui/endpoints", 200, 403, 403},
		{"/ui/dead-letters", 200, 403, 403},
		{"/ui/database", 200, 403, 403},
		{"/ui/deliveries/" + f.deliveryA, 200, 403, 403},
		{"/ui/messages/" + strings.TrimPrefix(f.messageID, "msg_"), 200, 403, 403},
		{"/ui/m/", 403, 200, 200},
		{"/ui/m/endpoints/" + f.endpointA, 403, 200, 404},
		{"/ui/m/deliveries/" + f.deliveryA, 403, 200, 404},
	}
	for _, p := range pages {
		st, _, resp := anon.do("GET", p.path, nil)
		require.Equal(t, http.StatusSeeOther, st, "anonymous GET %s", p.path)
		require.Equal(t, "/ui/login", resp.Header.Get("Location"))
		st, _, _ = bad.do("GET", p.path, nil)
		require.Contains(t, []int{303, 401}, st, "forged session GET %s", p.path)
		for _, c := range []struct {
			who  string
			s    *secUISession
			want int
		}{{"admin", admin, p.admin}, {"merchant A", ma, p.merchantA}, {"merchant B", mb, p.merchB}} {
			st, body, _ := c.s.do("GET", p.path, nil)
			require.Equal(t, c.want, st, "%s GET %s: %.300s", c.who, p.path, body)
		}
	}

	// State-changing forms: without a session 401; with a session but no or
	// a wrong CSRF token 403; another merchant's token does not work either.
	adminCSRF := admin.csrf("/ui/endpoints")
	maCSRF := ma.csrf("/ui/m/endpoints/" + f.endpointA)
	mbCSRF := mb.csrf("/ui/m/")
	posts := []struct {
		s    *secUISession
		path string
		good string
	}{
		{admin, "/ui/endpoints/" + f.endpointA + "/disable", adminCSRF},
		{admin, "/ui/deliveries/" + f.deliveryA + "/retry", adminCSRF},
		{ma, "/ui/m/endpoints/" + f.endpointA + "/rotate", maCSRF},
		{ma, "/ui/m/endpoints/" + f.endpointA + "/reveal", maCSRF},
		{ma, "/ui/m/endpoints/" + f.endpointA + "/test", maCSRF},
		{admin, "/ui/endpoints/" + f.endpointA + "/replay/confirm", adminCSRF},
		{admin, "/ui/endpoints/" + f.endpointA + "/replay", adminCSRF},
		{admin, "/ui/ops-endpoints", adminCSRF},
		{ma, "/ui/m/endpoints/" + f.endpointA + "/replay/confirm", maCSRF},
		{ma, "/ui/m/endpoints/" + f.endpointA + "/replay", maCSRF},
	}
	for _, p := range posts {
		st, _, _ := anon.do("POST", p.path, url.Values{"csrf": {p.good}})
		require.Equal(t, http.StatusUnauthorized, st, "anonymous POST %s", p.path)
		st, _, _ = p.s.do("POST", p.path, url.Values{})
		require.Equal(t, http.StatusForbidden, st, "POST %s without csrf", p.path)
		st, _, _ = p.s.do("POST", p.path, url.Values{"csrf": {"forged" + p.good}})
		require.Equal(t, http.StatusForbidden, st, "POST %s with a wrong csrf", p.path)
		other := mbCSRF
		if p.s == ma {
			other = adminCSRF
		}
		st, _, _ = p.s.do("POST", p.path, url.Values{"csrf": {other}})
		require.Equal(t, http.StatusForbidden, st, "POST %s with another session's csrf", p.path)
	}
	// Merchant B, with its own valid token, cannot act on A's endpoint.
	for _, action := range []string{"rotate", "reveal", "test"} {
		st, _, _ := mb.do("POST", fmt.Sprintf("/ui/m/endpoints/%s/%s", f.endpointA, action), url.Values{"csrf": {mbCSRF}})
		require.Contains(t, []int{403, 404}, st, "merchant B POST %s on A's endpoint", action)
	}
	// The right token works (the control).
	st, _, _ := admin.do("POST", "/ui/endpoints/"+f.endpointA+"/disable", url.Values{"csrf": {adminCSRF}})
	require.Less(t, st, 400, "admin disable with its csrf token")
}
