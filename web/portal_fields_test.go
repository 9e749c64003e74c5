package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// portalCreate posts the portal's new-endpoint form and returns the id of
// the endpoint created.
func portalCreate(t *testing.T, c *uiClient, form url.Values) string {
	t.Helper()
	resp, page := c.do("POST", "/ui/m/endpoints", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	return strings.TrimSuffix(strings.TrimPrefix(resp.Header.Get("Location"), "/ui/m/endpoints/"), "?done=created")
}

// apiError is the message the API answers a POST /v1/endpoints body with.
func apiError(t *testing.T, base, key string, body map[string]any) string {
	t.Helper()
	status, out := apiCallBase(t, base, "POST", "/v1/endpoints", key, body)
	require.Equal(t, http.StatusBadRequest, status, "%v", out)
	return out["error"].(map[string]any)["message"].(string)
}

func TestPortalEndpointOrdering(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	c := newUIClient(t, f.URL)
	csrf := c.openPortal(portalLink(t, f.URL, m.ID, false))

	resp, page := c.do("GET", "/ui/m/endpoints/new", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<select id="ordering" name="ordering"`)
	require.Contains(t, page, `<option value="key">`, "key is offered first: the default")
	require.Less(t, strings.Index(page, `<option value="key">`), strings.Index(page, `<option value="none">`))

	bad := url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/o"}, "ordering": {"sideways"}}
	resp, page = c.do("POST", "/ui/m/endpoints", bad)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	msg := apiError(t, f.URL, key, map[string]any{"url": "http://127.0.0.1:9/o", "ordering": "sideways"})
	require.Contains(t, html.UnescapeString(page), `<div class="field-error" id="ordering-error">`+msg+`</div>`)

	form := url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/o"}, "ordering": {"none"}}
	id := portalCreate(t, c, form)
	ep, err := f.store.EndpointGet(context.Background(), mustAtoi(t, id))
	require.NoError(t, err)
	require.Equal(t, db.OrderingNone, ep.Ordering)

	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/edit", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<option value="none" selected>`)
	form.Set("ordering", db.OrderingKey)
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	ep, err = f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Equal(t, db.OrderingKey, ep.Ordering)
}

func TestPortalEndpointFilter(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	c := newUIClient(t, f.URL)
	csrf := c.openPortal(portalLink(t, f.URL, m.ID, false))

	// The filter parser's error, the API's message, next to the field; the
	// text posted is kept.
	const broken = `status == "DELIVERED" &&`
	form := url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/f"}, "filter": {broken}}
	resp, page := c.do("POST", "/ui/m/endpoints", form)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	msg := apiError(t, f.URL, key, map[string]any{"url": "http://127.0.0.1:9/f", "filter": broken})
	require.True(t, strings.HasPrefix(msg, "filter: "), msg)
	require.Contains(t, html.UnescapeString(page), `<div class="field-error" id="filter-error">`+msg+`</div>`)
	require.Contains(t, html.UnescapeString(page), `value="`+broken+`"`)

	const good = `status == "DELIVERED" && weight > 2`
	form.Set("filter", good)
	id := portalCreate(t, c, form)
	ep, err := f.store.EndpointGet(context.Background(), mustAtoi(t, id))
	require.NoError(t, err)
	require.Equal(t, good, ep.Filter)

	// Edit shows it; an empty filter removes it.
	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/edit", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, html.UnescapeString(page), `value="`+good+`"`)
	form.Set("filter", "")
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	ep, err = f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Empty(t, ep.Filter)
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, s)
	return n
}

// TestPortalEndpointShowsHeaderNames: the endpoint page names the custom
// headers and the auth type and user, never a header value or a secret.
func TestPortalEndpointShowsHeaderNames(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	status, out := apiCallBase(t, f.URL, "POST", "/v1/endpoints", key, map[string]any{
		"url":     "http://127.0.0.1:9/h",
		"headers": map[string]any{"X-Api-Key": "value-k-123"},
		"auth":    map[string]any{"type": "basic", "username": "hook", "password": "pa55word-x"},
	})
	require.Equal(t, http.StatusCreated, status, "%v", out)
	c := newUIClient(t, f.URL)
	c.openPortal(portalLink(t, f.URL, m.ID, true))
	resp, page := c.do("GET", "/ui/m/endpoints/"+fmt.Sprint(out["id"]), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<code>X-Api-Key</code>`)
	require.Contains(t, page, `basic as <code>hook</code>`)
	require.NotContains(t, page, "value-k-123")
	require.NotContains(t, page, "pa55word-x")
}

// TestPortalEndpointHeadersAuth: headers and credentials set through the
// portal's form are stored as the API stores them; the edit form never
// holds a stored value (masked, write-only), an empty input keeps it, a
// typed one replaces it, a ticked one removes it; a refused header or
// credential shows the API's message next to its field; the signature
// scheme switches to ed25519 and the page shows the public key only.
func TestPortalEndpointHeadersAuth(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	c := newUIClient(t, f.URL)
	csrf := c.openPortal(portalLink(t, f.URL, m.ID, false))
	ctx := context.Background()

	resp, page := c.do("GET", "/ui/m/endpoints/new", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `aria-label="Name of new header 1"`)
	require.Contains(t, page, `<label for="auth_password">Password</label>`)

	// A refused header name: the API's message, next to the field.
	bad := url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/h"}, "header_name": {"Bad Name", ""}, "header_value": {"v1", ""}}
	resp, page = c.do("POST", "/ui/m/endpoints", bad)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	msg := apiError(t, f.URL, key, map[string]any{"url": "http://127.0.0.1:9/h", "headers": map[string]any{"Bad Name": "v1"}})
	require.Contains(t, html.UnescapeString(page), `<div class="field-error" id="headers-error">`+msg+`</div>`)
	require.Contains(t, page, `value="Bad Name"`, "what was typed is kept")
	bad = url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/h"}, "auth_type": {"basic"}, "auth_password": {"pw-only"}}
	resp, page = c.do("POST", "/ui/m/endpoints", bad)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	msg = apiError(t, f.URL, key, map[string]any{"url": "http://127.0.0.1:9/h", "auth": map[string]any{"type": "basic", "password": "pw-only"}})
	require.Contains(t, html.UnescapeString(page), `<div class="field-error" id="auth-error">`+msg+`</div>`)
	require.NotContains(t, page, "pw-only", "a password is never put into a page")
	bad = url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/h"}, "signature": {"rsa"}}
	resp, page = c.do("POST", "/ui/m/endpoints", bad)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	msg = apiError(t, f.URL, key, map[string]any{"url": "http://127.0.0.1:9/h", "signature": "rsa"})
	require.Contains(t, html.UnescapeString(page), `<div class="field-error" id="signature-error">`+msg+`</div>`)

	form := url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/h"},
		"header_name": {"x-api-key", "X-Tenant"}, "header_value": {"secret-hv-1", "tenant-hv-2"},
		"auth_type": {"basic"}, "auth_username": {"hook"}, "auth_password": {"pa55-form-9"}}
	id := portalCreate(t, c, form)
	ep, err := f.store.EndpointGet(ctx, mustAtoi(t, id))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Api-Key": "secret-hv-1", "X-Tenant": "tenant-hv-2"}, ep.Headers)
	require.Equal(t, &db.EndpointAuth{Type: "basic", Username: "hook", Password: "pa55-form-9"}, ep.Auth)
	require.Equal(t, "hmac", ep.Signature)

	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/edit", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, secret := range []string{"secret-hv-1", "tenant-hv-2", "pa55-form-9"} {
		require.NotContains(t, page, secret)
	}
	require.Contains(t, page, `<input type="hidden" name="header_keep" value="X-Api-Key">`)
	require.Contains(t, page, `value="hook"`)
	require.Contains(t, page, `<option value="basic" selected>`)

	// Save with the inputs as the edit form shows them: nothing changes.
	edit := url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/h"},
		"header_keep": {"X-Api-Key", "X-Tenant"}, "header_keep_value": {"", ""}, "header_name": {"", ""}, "header_value": {"", ""},
		"auth_type": {"basic"}, "auth_username": {"hook"}, "auth_password": {""}, "signature": {"hmac"}}
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, edit)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	got, err := f.store.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, ep.Headers, got.Headers)
	require.Equal(t, ep.Auth, got.Auth)

	// Replace one, remove the other, add one; bearer credentials; ed25519.
	edit.Set("header_keep_value", "secret-hv-new")
	edit["header_keep_value"] = []string{"secret-hv-new", ""}
	edit.Set("header_remove", "X-Tenant")
	edit["header_name"], edit["header_value"] = []string{"X-Region", ""}, []string{"eu", ""}
	edit.Set("auth_type", "bearer")
	edit.Set("auth_token", "tok-form-3")
	edit.Set("signature", "ed25519")
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, edit)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	got, err = f.store.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Api-Key": "secret-hv-new", "X-Region": "eu"}, got.Headers)
	require.Equal(t, &db.EndpointAuth{Type: "bearer", Token: "tok-form-3"}, got.Auth)
	require.Equal(t, "ed25519", got.Signature)
	require.True(t, strings.HasPrefix(got.PublicKey, "whpk_"))

	resp, page = c.do("GET", "/ui/m/endpoints/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The key is base64: a "+" in it is written &#43; in the page.
	require.Contains(t, html.UnescapeString(page), `<code id="public-key">`+got.PublicKey+`</code>`)
	resp, page = c.do("POST", "/ui/m/endpoints/"+id+"/reveal", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, page, "whsk_", "a private key is never shown")
	require.Contains(t, html.UnescapeString(page), got.PublicKey)

	// Auth none removes the credentials.
	edit.Set("auth_type", "none")
	edit["header_keep"], edit["header_keep_value"], edit["header_remove"] = nil, nil, nil
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, edit)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	got, err = f.store.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Nil(t, got.Auth)
}

// TestSessionsListMarksPortalSessions: the operator's sessions page and
// GET /v1/sessions tell portal sessions (opened by a magic link) from
// sessions opened with a key, and read-only ones from the others.
func TestSessionsListMarksPortalSessions(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	newUIClient(t, f.URL).openPortal(portalLink(t, f.URL, m.ID, false))
	newUIClient(t, f.URL).openPortal(portalLink(t, f.URL, m.ID, true))
	newUIClient(t, f.URL).login(key)
	op := newUIClient(t, f.URL)
	op.login(testAdminToken)

	rows, err := f.store.LoginSessionList(context.Background(), time.Now(), 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 4)
	byKind := map[string]db.LoginSessionRecord{}
	for _, r := range rows {
		switch {
		case r.Kind == "admin":
			byKind["admin"] = r
		case r.Portal && r.ReadOnly:
			byKind["portal-ro"] = r
		case r.Portal:
			byKind["portal"] = r
		default:
			byKind["key"] = r
		}
	}
	require.Len(t, byKind, 4, "%+v", rows)

	resp, page := op.do("GET", "/ui/sessions", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	has := func(id int64, badge string) bool {
		return strings.Contains(page, fmt.Sprintf(`id="%s-%d"`, badge, id))
	}
	require.True(t, has(byKind["portal"].ID, "portal"))
	require.False(t, has(byKind["portal"].ID, "read-only"))
	require.True(t, has(byKind["portal-ro"].ID, "portal"))
	require.True(t, has(byKind["portal-ro"].ID, "read-only"))
	require.False(t, has(byKind["key"].ID, "portal"))
	require.False(t, has(byKind["key"].ID, "read-only"))
	require.False(t, has(byKind["admin"].ID, "portal"))

	status, out := apiCallBase(t, f.URL, "GET", "/v1/sessions", testAdminToken, nil)
	require.Equal(t, http.StatusOK, status, "%v", out)
	got := map[string][2]bool{}
	for _, it := range out["items"].([]any) {
		s := it.(map[string]any)
		got[s["id"].(string)] = [2]bool{s["portal"].(bool), s["read_only"].(bool)}
	}
	require.Equal(t, map[string][2]bool{
		itoa(byKind["admin"].ID): {false, false}, itoa(byKind["key"].ID): {false, false},
		itoa(byKind["portal"].ID): {true, false}, itoa(byKind["portal-ro"].ID): {true, true},
	}, got)
}
