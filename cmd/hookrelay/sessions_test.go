package main

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// noRedirects is a client that keeps every answer as it comes.
func noRedirects(t *testing.T) *http.Client {
	c := &http.Client{Transport: apitest.Wrap(t, &http.Transport{}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// dashboardLogin posts the login form with token; it returns the answer's
// status and the session cookie (nil when none was set).
func dashboardLogin(t *testing.T, c *http.Client, base, token string) (int, *http.Cookie) {
	t.Helper()
	resp, err := c.Get(base + "/ui/login")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	require.NotNil(t, m)
	req, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(url.Values{"csrf": {string(m[1])}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range resp.Cookies() {
		req.AddCookie(ck)
	}
	resp, err = c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "hr_session" && ck.Value != "" {
			return resp.StatusCode, ck
		}
	}
	return resp.StatusCode, nil
}

func getWith(t *testing.T, c *http.Client, u string, ck *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.AddCookie(ck)
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// A restart with another HOOKRELAY_ADMIN_TOKEN ends the admin sessions of
// the previous token, and says so in the log.
func TestServeNewAdminTokenEndsOldSessions(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewURL(t)
	c := noRedirects(t)
	s := startServe(t, map[string]string{"DATABASE_URL": dbURL}, "--roles", "web")
	st, ck := dashboardLogin(t, c, s.URL, "hra_test_admin_token_0123456789")
	require.Equal(t, http.StatusSeeOther, st)
	require.NotNil(t, ck)
	require.Equal(t, http.StatusOK, getWith(t, c, s.URL+"/ui/endpoints", ck))
	require.NoError(t, s.Stop(t))

	s2 := startServe(t, map[string]string{"DATABASE_URL": dbURL, "HOOKRELAY_ADMIN_TOKEN": "hra_another_admin_token_98765"}, "--roles", "web")
	require.Equal(t, http.StatusSeeOther, getWith(t, c, s2.URL+"/ui/endpoints", ck), "the old token's session")
	require.Contains(t, s2.Logs.String(), "ended the dashboard sessions opened with the previous one")
	st, _ = dashboardLogin(t, c, s2.URL, "hra_another_admin_token_98765")
	require.Equal(t, http.StatusSeeOther, st)
}

// The API and the dashboard of a process share one throttle: failures on
// one delay the other, and both count in the metrics.
func TestServeAuthThrottleSharedAndCounted(t *testing.T) {
	t.Parallel()
	s := startServe(t, map[string]string{"HOOKRELAY_AUTH_THROTTLE_FREE": "3"})
	c := noRedirects(t)
	for range 3 {
		req, _ := http.NewRequest("GET", s.URL+"/v1/carriers", nil)
		req.Header.Set("Authorization", "Bearer hra_wrong_token_0000000000")
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	st, _ := dashboardLogin(t, c, s.URL, "hra_test_admin_token_0123456789")
	require.Equal(t, http.StatusTooManyRequests, st, "a login from the address the API throttles")

	resp, err := c.Get(s.URL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), `hookrelay_auth_failures_total{surface="api"} 3`)
	require.Contains(t, string(body), `hookrelay_auth_failures_total{surface="dashboard"} 0`)
	require.Contains(t, string(body), `hookrelay_auth_throttled_total{surface="dashboard"} 1`)
}
