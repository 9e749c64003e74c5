package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The users page in a real browser: an owner (the admin token) invites a
// user, who accepts, lands on pages without the owner's links, creates an
// API token, and is logged out at once by a deactivation.
func TestUsersBrowser(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	b := newBrowser(t)

	login(t, b, f.URL, testAdminToken, "#nav-users")
	browse(t, b, chromedp.Click(chromedp.CSS("#nav-users")), chromedp.WaitVisible(chromedp.CSS("#invite-form")),
		chromedp.SendKeys(chromedp.CSS("#invite-email"), "grace@example.com"),
		chromedp.SetValue(chromedp.CSS("#invite-role"), "operator"),
		chromedp.Click(chromedp.CSS("#invite-submit")), chromedp.WaitVisible(chromedp.CSS("#invite-url")))
	link := text(t, b, "#invite-url")
	require.Contains(t, link, "/ui/invite?token=")
	screenshot(t, b, "users")
	logout(t, b)

	browse(t, b, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#invite-submit")))
	require.Equal(t, "operator", text(t, b, "#invite-role"))
	browse(t, b, chromedp.SendKeys(chromedp.CSS("#name"), "Grace"),
		chromedp.SendKeys(chromedp.CSS("#password"), "a long enough password"),
		chromedp.Click(chromedp.CSS("#invite-submit")), chromedp.WaitVisible(chromedp.CSS("#nav-tokens")))
	require.True(t, value(t, b, chromedp.Evaluate[bool](`document.getElementById("nav-users") === null`)), "an operator has no users page")

	browse(t, b, chromedp.Click(chromedp.CSS("#nav-tokens")), chromedp.WaitVisible(chromedp.CSS("#token-form")),
		chromedp.SendKeys(chromedp.CSS("#token-name"), "laptop"),
		chromedp.SetValue(chromedp.CSS("#token-role"), "viewer"),
		chromedp.Click(chromedp.CSS("#token-submit")), chromedp.WaitVisible(chromedp.CSS("#new-token")))
	require.Regexp(t, `^hrt_`, text(t, b, "#new-token"))
	screenshot(t, b, "tokens")

	// Deactivated by an owner: the next page is the login form.
	st, users := teamAPI(t, f.URL, http.MethodGet, "/v1/users", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	id := users["items"].([]any)[0].(map[string]any)["id"].(string)
	st, _ = teamAPI(t, f.URL, http.MethodPost, "/v1/users/"+url.PathEscape(id)+"/deactivate", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	browse(t, b, chromedp.Navigate(f.URL+"/ui/tokens"), chromedp.WaitVisible(chromedp.CSS("#token")))
}
