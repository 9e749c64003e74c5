package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
)

// The operator adds, lists and deletes ops endpoints from the dashboard; the
// secret is shown once, in the answer to the add.
func TestWebOpsEndpoints(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	c := newUIClient(t, f.URL)
	csrf := c.login(testAdminToken)

	resp, page := c.do("GET", "/ui/ops-endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<label for="url">URL</label>`)
	require.Contains(t, page, `<label for="description">Description (optional)</label>`)
	require.Contains(t, page, `<legend>Events</legend>`)
	require.Contains(t, page, `value="replay.finished"`)

	// A bad URL: the error next to the field, the form as typed.
	resp, page = c.do("POST", "/ui/ops-endpoints", url.Values{"csrf": {csrf}, "url": {"ftp://ops.example/x"},
		"events": {"replay.finished"}, "description": {"pager"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, page)
	require.Contains(t, page, `id="url-error">url must be an http or https URL<`)
	require.Contains(t, page, `value="ftp://ops.example/x"`)
	require.Regexp(t, `value="replay.finished" checked`, page)
	require.Contains(t, page, `No ops endpoints yet.`)
	// An unknown event type: next to the events.
	resp, page = c.do("POST", "/ui/ops-endpoints", url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/ops"}, "events": {"nope"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, page)
	require.Contains(t, page, `id="events-error">events[0]: unknown event type`)
	// Without the CSRF token nothing is added.
	resp, _ = c.do("POST", "/ui/ops-endpoints", url.Values{"url": {"http://127.0.0.1:9/ops"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, page = c.do("POST", "/ui/ops-endpoints", url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/ops"},
		"events": {"endpoint.disabled", "replay.finished"}, "description": {"pager"}})
	require.Equal(t, http.StatusCreated, resp.StatusCode, page)
	secret := regexp.MustCompile(`id="ops-secret">(whsec_[^<]+)<`).FindStringSubmatch(page)
	require.NotNil(t, secret, page)
	id := regexp.MustCompile(`id="ops-endpoint-(\d+)"`).FindStringSubmatch(page)
	require.NotNil(t, id)
	require.Contains(t, page, "endpoint.disabled, replay.finished")

	resp, page = c.do("GET", "/ui/ops-endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="ops-endpoint-`+id[1]+`"`)
	require.Contains(t, page, "http://127.0.0.1:9/ops")
	require.Contains(t, page, "pager")
	require.NotContains(t, page, secret[1], "the secret is shown once")
	require.NotContains(t, page, `id="ops-secret"`)

	resp, page = c.do("GET", "/ui/ops-endpoints/"+id[1]+"/delete", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `id="confirm-delete"`)
	resp, _ = c.do("POST", "/ui/ops-endpoints/"+id[1]+"/delete", url.Values{})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	resp, _ = c.do("POST", "/ui/ops-endpoints/"+id[1]+"/delete", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, page = c.do("GET", resp.Header.Get("Location"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Ops endpoint deleted.")
	require.NotContains(t, page, `id="ops-endpoint-`+id[1]+`"`)
	resp, _ = c.do("POST", "/ui/ops-endpoints/"+id[1]+"/delete", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = c.do("GET", "/ui/ops-endpoints/"+id[1]+"/delete", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// A merchant has no such page.
	_, key := dbtest.Merchant(t, f.store, nil)
	mc := newUIClient(t, f.URL)
	mc.login(key)
	resp, _ = mc.do("GET", "/ui/ops-endpoints", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
