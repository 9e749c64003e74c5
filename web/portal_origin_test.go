package web_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestPortalOpenOrigin posts a portal link's open form with each shape of
// the headers that say where a post comes from. Only a post that a page of
// the dashboard sent opens the session: a sandboxed iframe or a data:
// document (Origin: null), a client that sends neither Origin nor
// Sec-Fetch-Site, and another site are refused (login CSRF: no page may log
// a visitor into a portal of its choosing), without spending the link.
func TestPortalOpenOrigin(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, _ := dbtest.Merchant(t, f.store, &dbtest.MerchantOpts{Name: "Origin Shop"})
	link, err := url.Parse(portalLink(t, f.URL, m.ID, false))
	require.NoError(t, err)
	token := link.Query().Get("token")
	host := strings.TrimPrefix(f.URL, "http://")

	post := func(headers map[string]string) (*http.Response, string) {
		t.Helper()
		return postOpen(t, f.URL, token, headers)
	}
	fresh := func() string {
		u, err := url.Parse(portalLink(t, f.URL, m.ID, false))
		require.NoError(t, err)
		return u.Query().Get("token")
	}
	sessionSet := func(resp *http.Response) bool {
		for _, ck := range resp.Cookies() {
			if ck.Name == "hr_session" && ck.Value != "" {
				return true
			}
		}
		return false
	}

	for _, tc := range []struct {
		name    string
		headers map[string]string
	}{
		{"Origin null (sandboxed iframe, data: document)", map[string]string{"Origin": "null"}},
		{"Origin null, same-origin claimed", map[string]string{"Origin": "null", "Sec-Fetch-Site": "same-origin"}},
		{"neither Origin nor Sec-Fetch-Site", nil},
		{"another site", map[string]string{"Origin": "http://evil.example"}},
		{"another port of the same host", map[string]string{"Origin": "http://127.0.0.1:1"}},
		{"another site claiming same-origin", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}},
		{"no Origin, cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"no Origin, same-site", map[string]string{"Sec-Fetch-Site": "same-site"}},
		{"no Origin, user-initiated", map[string]string{"Sec-Fetch-Site": "none"}},
		{"not an origin", map[string]string{"Origin": "http://" + host + "/ui/portal/open"}},
	} {
		resp, page := post(tc.headers)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, tc.name)
		require.False(t, sessionSet(resp), "%s: no session cookie", tc.name)
		require.Contains(t, page, "This form must be submitted from "+f.URL, tc.name)
	}
	logs := f.Logs.String()
	require.Contains(t, logs, `"level":"INFO","msg":"form post refused: not from this dashboard's origin"`)
	require.Contains(t, logs, `"origin":"null"`)
	require.NotContains(t, logs, token, "the log never holds the link")

	// The same origin opens the session (the refusals did not spend the
	// link), in Chromium's way: Origin on every POST.
	resp, page := post(map[string]string{"Origin": f.URL, "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	require.Equal(t, "/ui/m/", resp.Header.Get("Location"))
	require.True(t, sessionSet(resp))
	// The scheme is not compared: behind a TLS-terminating proxy the page's
	// origin is https:// while this process is reached over http.
	resp, page = postOpen(t, f.URL, fresh(), map[string]string{"Origin": "https://" + host})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	require.True(t, sessionSet(resp))
	// No Origin (stripped by a proxy or an extension), but the browser's
	// Sec-Fetch-Site says the dashboard's own page sent it.
	resp, page = postOpen(t, f.URL, fresh(), map[string]string{"Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	require.True(t, sessionSet(resp))
}

// postOpen posts a portal link's open form with token, with headers only
// (besides the form's), from a client without cookies; it returns the
// answer and its page, unescaped.
func postOpen(t *testing.T, base, token string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/ui/portal/open", strings.NewReader(url.Values{"token": {token}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := newUIClient(t, base).hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, html.UnescapeString(string(b))
}
