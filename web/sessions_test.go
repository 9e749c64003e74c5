package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

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
	st, _, _ = replay.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusSeeOther, st, "the logged-out cookie still opens a page")
	st, _, _ = replay.do("POST", "/ui/endpoints/"+f.endpointA+"/disable", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusUnauthorized, st, "the logged-out cookie and CSRF token still act")
}
