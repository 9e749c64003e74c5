package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/web"
)

// An operator scoped to one merchant sees that merchant's dead letters only
// on the dead-letter page, counts and acts on them only, by filter and by
// selection, and another merchant's dead delivery is not found.
func TestScopedUserDeadLetters(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ctx := context.Background()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	t.Cleanup(failing.Close)
	m1, _ := dbtest.Merchant(t, f.store, nil)
	m2, _ := dbtest.Merchant(t, f.store, nil)
	retry := []time.Duration{10 * time.Millisecond}
	ep1, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m1.ID, URL: failing.URL, RetrySchedule: retry})
	ep2, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m2.ID, URL: failing.URL, RetrySchedule: retry})
	for range 2 {
		dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep1.ID, ep2.ID}})
	}
	deadOf := func(ep db.Endpoint) []db.DeadLetter {
		rows, err := f.store.DeadLetterList(ctx, db.DeadLetterFilter{EndpointID: ep.ID}, db.DeadLetterPage{Newest: true}, 10)
		require.NoError(t, err)
		return rows
	}
	require.Eventually(t, func() bool { return len(deadOf(ep1)) == 2 && len(deadOf(ep2)) == 2 },
		30*time.Second, 20*time.Millisecond, "the deliveries did not become dead letters")
	// Disabled, the endpoints keep retried rows pending.
	for _, ep := range []db.Endpoint{ep1, ep2} {
		_, err := f.store.EndpointDisable(ctx, ep.ID, "test")
		require.NoError(t, err)
	}
	mine, theirs := deadOf(ep1), deadOf(ep2)

	e := echo.New()
	rec := httptest.NewRecorder()
	require.NoError(t, web.StartSSOSession(f.Dash, e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec), "scoped-dl@example.com", "", access.Operator))
	st, users := teamAPI(t, f.URL, http.MethodGet, "/v1/users", testAdminToken, nil)
	require.Equal(t, http.StatusOK, st)
	id := users["items"].([]any)[0].(map[string]any)["id"].(string)
	st, out := teamAPI(t, f.URL, http.MethodPatch, "/v1/users/"+id, testAdminToken, map[string]any{"scope": map[string]any{"merchants": []int64{m1.ID}}})
	require.Equal(t, http.StatusOK, st, "%v", out)
	c := newUIClient(t, f.URL)
	u, _ := url.Parse(f.URL + "/ui/")
	c.hc.Jar.SetCookies(u, rec.Result().Cookies())

	row := func(d db.DeadLetter) string { return `id="dl-` + strconv.FormatInt(d.ID, 10) + `"` }
	resp, page := c.do("GET", "/ui/dead-letters", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	for _, d := range mine {
		require.Contains(t, page, row(d))
	}
	for _, d := range theirs {
		require.NotContains(t, page, row(d), "another merchant's dead letter is listed")
	}
	csrf := csrfOf(t, page)
	_, page = c.do("GET", "/ui/dead-letters?endpoint_id="+strconv.FormatInt(ep2.ID, 10), nil)
	require.Contains(t, page, `id="dl-empty"`, "another merchant's endpoint selects nothing")
	resp, _ = c.do("GET", "/ui/deliveries/"+strconv.FormatInt(theirs[0].ID, 10), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "another merchant's dead delivery")
	resp, _ = c.do("GET", "/ui/deliveries/"+strconv.FormatInt(mine[0].ID, 10), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The confirmation counts the scope's only.
	resp, page = c.do("POST", "/ui/dead-letters/confirm", url.Values{"csrf": {csrf}, "scope": {"filter"}, "action": {"discard"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "<strong>2</strong> dead letter(s)")

	apply := func(form url.Values) string {
		t.Helper()
		form.Set("csrf", csrf)
		resp, page := c.do("POST", "/ui/dead-letters/apply", form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		return loc.Query().Get("n")
	}
	// By selection: another merchant's ids are not acted on.
	require.Equal(t, "1", apply(url.Values{"action": {"discard"}, "scope": {"selected"},
		"id": {strconv.FormatInt(theirs[0].ID, 10), strconv.FormatInt(theirs[1].ID, 10), strconv.FormatInt(mine[0].ID, 10)}}))
	// By filter: the scope's only.
	require.Equal(t, "0", apply(url.Values{"action": {"retry"}, "scope": {"filter"}, "endpoint_id": {strconv.FormatInt(ep2.ID, 10)}}))
	require.Equal(t, "1", apply(url.Values{"action": {"retry"}, "scope": {"filter"}}))
	require.Empty(t, deadOf(ep1))
	require.Len(t, deadOf(ep2), 2, "the other merchant's dead letters are untouched")
}
