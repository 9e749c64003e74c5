package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/ops"
)

// refused checks that a session's cookie no longer opens a page nor acts
// with its CSRF token.
func refused(t *testing.T, s *secUISession, page, post, csrf string) {
	t.Helper()
	st, _, resp := s.do("GET", page, nil)
	require.Equal(t, http.StatusSeeOther, st, "GET %s with an ended session", page)
	require.Equal(t, "/ui/login", resp.Header.Get("Location"))
	st, _, _ = s.do("POST", post, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusUnauthorized, st, "POST %s with an ended session and its CSRF token", post)
}

// After logout the old session cookie and its CSRF token are refused at once.
func TestLogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	f := newDashboardAuthFixture(t)
	admin := secUILogin(t, f.URL, testAdminToken)
	csrf := admin.csrf("/ui/endpoints")
	old := admin.cookie

	st, _, _ := admin.do("POST", "/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, st)

	replay := &secUISession{t: t, base: f.URL, client: admin.client, cookie: old}
	refused(t, replay, "/ui/endpoints", "/ui/endpoints/"+f.endpointA+"/disable", csrf)

	ep, err := f.store.EndpointGet(context.Background(), mustID(t, f.endpointA))
	require.NoError(t, err)
	require.Equal(t, "enabled", string(ep.Status), "the replayed form acted")
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

// A new admin token ends every admin session opened with the old one, at
// once; merchant sessions go on, and the new token logs in.
func TestAdminTokenChangeEndsAdminSessions(t *testing.T) {
	t.Parallel()
	f := newDashboardAuthFixture(t)
	admin := secUILogin(t, f.URL, testAdminToken)
	csrf := admin.csrf("/ui/endpoints")
	ma := secUILogin(t, f.URL, f.merchantA)

	const newToken = "hra_the_next_admin_token_98765"
	n, err := ops.New(f.store, ops.Config{}).SetAdminToken(context.Background(), newToken)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "admin sessions ended")

	refused(t, admin, "/ui/endpoints", "/ui/endpoints/"+f.endpointA+"/disable", csrf)
	st, _, _ := ma.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, st, "a merchant session outlived the admin token change")
	admin2 := secUILogin(t, f.URL, newToken)
	st, _, _ = admin2.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusOK, st)

	// A token changed without the revocation (the settings row rewritten)
	// ends the sessions of the old one too: a session is valid only while
	// its credential is the current one.
	require.NoError(t, dbtest.SettingPut(context.Background(), f.store, "admin_token_sha256", strings.Repeat("ab", 32)))
	st, _, _ = admin2.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusSeeOther, st)
}

// apiCall makes an API request with a bearer token and decodes a JSON answer
// into out (when not nil).
func apiCall(t *testing.T, client *http.Client, method, u, token string, out any) *http.Response {
	t.Helper()
	return apiDo(t, client, method, u, token, nil, out)
}

// Rotating a merchant's key through the API ends that merchant's sessions
// and the old key, at once; another merchant's sessions go on.
func TestMerchantKeyRotationEndsItsSessions(t *testing.T) {
	t.Parallel()
	f := newDashboardAuthFixture(t)
	ma := secUILogin(t, f.URL, f.merchantA)
	maCSRF := ma.csrf("/ui/m/endpoints/" + f.endpointA)
	mb := secUILogin(t, f.URL, f.merchantB)
	c := secUIClient(t)

	var me struct {
		Items []struct{ ID string } `json:"items"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, c, "GET", f.URL+"/v1/endpoints", f.merchantA, &me).StatusCode)
	ep, err := f.store.EndpointGet(context.Background(), mustID(t, f.endpointA))
	require.NoError(t, err)

	var rotated struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}
	resp := apiCall(t, c, "POST", fmt.Sprintf("%s/v1/merchants/%d/rotate-key", f.URL, ep.MerchantID), testAdminToken, &rotated)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, strconv.FormatInt(ep.MerchantID, 10), rotated.ID)
	require.True(t, strings.HasPrefix(rotated.APIKey, "hrm_"), rotated.APIKey)

	refused(t, ma, "/ui/m/", "/ui/m/endpoints/"+f.endpointA+"/rotate", maCSRF)
	st, _, _ := mb.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, st, "another merchant's session ended")
	require.Equal(t, http.StatusUnauthorized, apiCall(t, c, "GET", f.URL+"/v1/endpoints", f.merchantA, nil).StatusCode, "the old key")
	require.Equal(t, http.StatusOK, apiCall(t, c, "GET", f.URL+"/v1/endpoints", rotated.APIKey, nil).StatusCode, "the new key")
	secUILogin(t, f.URL, rotated.APIKey)

	// Only the operator rotates; an unknown merchant is 404.
	require.Equal(t, http.StatusForbidden, apiCall(t, c, "POST", fmt.Sprintf("%s/v1/merchants/%d/rotate-key", f.URL, ep.MerchantID), f.merchantB, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, apiCall(t, c, "POST", f.URL+"/v1/merchants/999999/rotate-key", testAdminToken, nil).StatusCode)
}

type sessionItem struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	MerchantID *string `json:"merchant_id"`
	CreatedAt  string  `json:"created_at"`
	LastSeenAt string  `json:"last_seen_at"`
	ExpiresAt  string  `json:"expires_at"`
	Client     struct {
		Address   string `json:"address"`
		UserAgent string `json:"user_agent"`
	} `json:"client"`
}

// The operator lists the live sessions and revokes one through the API and
// one through the dashboard's page; each is refused at once.
func TestOperatorRevokesSessions(t *testing.T) {
	t.Parallel()
	f := newDashboardAuthFixture(t)
	admin := secUILogin(t, f.URL, testAdminToken)
	ma := secUILogin(t, f.URL, f.merchantA)
	maCSRF := ma.csrf("/ui/m/")
	mb := secUILogin(t, f.URL, f.merchantB)
	mbCSRF := mb.csrf("/ui/m/")
	c := secUIClient(t)
	mA, err := f.store.MerchantByKeyHash(context.Background(), hookrelay.HashKey(f.merchantA))
	require.NoError(t, err)
	mB, err := f.store.MerchantByKeyHash(context.Background(), hookrelay.HashKey(f.merchantB))
	require.NoError(t, err)

	var list struct {
		Items      []sessionItem `json:"items"`
		NextCursor string        `json:"next_cursor"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, c, "GET", f.URL+"/v1/sessions?limit=2", testAdminToken, &list).StatusCode)
	require.Len(t, list.Items, 2)
	require.NotEmpty(t, list.NextCursor)
	var next struct {
		Items      []sessionItem `json:"items"`
		NextCursor string        `json:"next_cursor"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, c, "GET", f.URL+"/v1/sessions?cursor="+list.NextCursor, testAdminToken, &next).StatusCode)
	require.Empty(t, next.NextCursor)
	all := append(list.Items, next.Items...)
	require.Len(t, all, 3, "the three logins")
	byMerchant := map[int64]sessionItem{}
	for _, it := range all {
		require.Equal(t, "127.0.0.1", it.Client.Address)
		require.Equal(t, "Go-http-client/1.1", it.Client.UserAgent)
		require.NotEmpty(t, it.CreatedAt)
		require.NotEmpty(t, it.ExpiresAt)
		if it.Kind == "merchant" {
			require.NotNil(t, it.MerchantID)
			byMerchant[mustID(t, *it.MerchantID)] = it
		} else {
			require.Equal(t, "admin", it.Kind)
			require.Nil(t, it.MerchantID)
		}
	}
	require.Len(t, byMerchant, 2)

	// Merchants may neither list nor revoke.
	require.Equal(t, http.StatusForbidden, apiCall(t, c, "GET", f.URL+"/v1/sessions", f.merchantA, nil).StatusCode)
	require.Equal(t, http.StatusForbidden, apiCall(t, c, "DELETE", f.URL+"/v1/sessions/"+byMerchant[mB.ID].ID, f.merchantA, nil).StatusCode)

	// Through the API.
	require.Equal(t, http.StatusNoContent, apiCall(t, c, "DELETE", f.URL+"/v1/sessions/"+byMerchant[mA.ID].ID, testAdminToken, nil).StatusCode)
	refused(t, ma, "/ui/m/", "/ui/m/endpoints/"+f.endpointA+"/rotate", maCSRF)
	require.Equal(t, http.StatusNoContent, apiCall(t, c, "DELETE", f.URL+"/v1/sessions/"+byMerchant[mA.ID].ID, testAdminToken, nil).StatusCode, "again")
	require.Equal(t, http.StatusNotFound, apiCall(t, c, "DELETE", f.URL+"/v1/sessions/999999", testAdminToken, nil).StatusCode)
	st, _, _ := mb.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, st, "merchant B's session")

	// Through the dashboard: the page lists B's session with a revoke form.
	st, _, _ = mb.do("GET", "/ui/sessions", nil)
	require.Equal(t, http.StatusForbidden, st, "a merchant on the sessions page")
	adminCSRF := admin.csrf("/ui/sessions")
	st, page, _ := admin.do("GET", "/ui/sessions", nil)
	require.Equal(t, http.StatusOK, st)
	bID := byMerchant[mB.ID].ID
	require.Contains(t, page, `action="/ui/sessions/`+bID+`/revoke"`)
	require.NotContains(t, page, `id="session-`+byMerchant[mA.ID].ID+`"`, "a revoked session is listed")
	st, _, _ = admin.do("POST", "/ui/sessions/"+bID+"/revoke", url.Values{})
	require.Equal(t, http.StatusForbidden, st, "revoke without the CSRF token")
	st, _, resp := admin.do("POST", "/ui/sessions/"+bID+"/revoke", url.Values{"csrf": {adminCSRF}})
	require.Equal(t, http.StatusSeeOther, st)
	require.Equal(t, "/ui/sessions?done=revoked", resp.Header.Get("Location"))
	refused(t, mb, "/ui/m/", "/ui/m/endpoints/"+f.endpointA+"/test", mbCSRF)
	st, _, _ = admin.do("GET", "/ui/sessions", nil)
	require.Equal(t, http.StatusOK, st, "the operator's own session")
}

// loginFrom is a client whose connections come from the loopback address
// local (127.0.0.x), so one test can be several client addresses.
func loginFrom(t *testing.T, base, local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c := &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// tryLogin posts the login form with token from client and returns the
// status and the answer.
func tryLogin(t *testing.T, base string, c *http.Client, token string) (int, *http.Response) {
	t.Helper()
	s := &secUISession{t: t, base: base, client: c}
	_, page, resp := s.do("GET", "/ui/login", nil)
	for _, ck := range resp.Cookies() {
		if ck.Name == "hr_login" {
			s.cookie = ck
		}
	}
	m := secCSRFField.FindStringSubmatch(page)
	require.NotNil(t, m)
	st, _, resp := s.do("POST", "/ui/login", url.Values{"csrf": {m[1]}, "token": {token}})
	return st, resp
}

// After 5 failed logins from one address the 6th attempt is 429 with
// Retry-After, even with the right token; another address is unaffected;
// after the wait the right token logs in, and a wrong one is tried again.
func TestFailedLoginsAreThrottled(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	one := loginFrom(t, f.URL, "127.0.0.1")
	two := loginFrom(t, f.URL, "127.0.0.2")
	for i := range 5 {
		st, _ := tryLogin(t, f.URL, one, "hra_wrong_token_000000000000")
		require.Equal(t, http.StatusUnauthorized, st, "failure %d", i+1)
	}
	st, resp := tryLogin(t, f.URL, one, testAdminToken)
	require.Equal(t, http.StatusTooManyRequests, st, "6th attempt")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))

	st, _ = tryLogin(t, f.URL, two, "hra_wrong_token_000000000000")
	require.Equal(t, http.StatusUnauthorized, st, "another address")
	st, _ = tryLogin(t, f.URL, two, testAdminToken)
	require.Equal(t, http.StatusSeeOther, st, "another address logs in")

	time.Sleep(1100 * time.Millisecond)
	st, _ = tryLogin(t, f.URL, one, testAdminToken)
	require.Equal(t, http.StatusSeeOther, st, "after the wait")
	st, _ = tryLogin(t, f.URL, one, "hra_wrong_token_000000000000")
	require.Equal(t, http.StatusUnauthorized, st, "the wait is over")
}

// The same for bearer authentication on /v1.
func TestFailedBearerAuthIsThrottled(t *testing.T) {
	t.Parallel()
	f := newDashboardAuthFixture(t)
	one := loginFrom(t, f.URL, "127.0.0.1")
	two := loginFrom(t, f.URL, "127.0.0.2")
	for i := range 5 {
		resp := apiCall(t, one, "GET", f.URL+"/v1/endpoints", "hrm_wrong_key_0000000000000000", nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "failure %d", i+1)
	}
	resp := apiCall(t, one, "GET", f.URL+"/v1/endpoints", f.merchantA, nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "6th attempt")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))

	require.Equal(t, http.StatusUnauthorized, apiCall(t, two, "GET", f.URL+"/v1/endpoints", "hrm_wrong_key_0000000000000000", nil).StatusCode)
	require.Equal(t, http.StatusOK, apiCall(t, two, "GET", f.URL+"/v1/endpoints", f.merchantA, nil).StatusCode)

	time.Sleep(1100 * time.Millisecond)
	require.Equal(t, http.StatusOK, apiCall(t, one, "GET", f.URL+"/v1/endpoints", f.merchantA, nil).StatusCode, "after the wait")
	require.Equal(t, http.StatusUnauthorized, apiCall(t, one, "GET", f.URL+"/v1/endpoints", "hrm_wrong_key_0000000000000000", nil).StatusCode,
		"the wait is over")
}
