package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// portalLink asks the API (admin token) for a portal link of merchant id.
func portalLink(t *testing.T, base string, merchantID int64, readOnly bool) string {
	t.Helper()
	status, out := apiCallBase(t, base, "POST", "/v1/merchants/"+itoa(merchantID)+"/portal-links", testAdminToken,
		map[string]any{"ttl": "15m", "read_only": readOnly})
	require.Equal(t, http.StatusCreated, status, "%v", out)
	return out["url"].(string)
}

// openPortal opens a portal link as a browser does (the landing page, then
// its form) and returns the CSRF token of the portal's first page.
func (c *uiClient) openPortal(link string) string {
	c.t.Helper()
	u, err := url.Parse(link)
	require.NoError(c.t, err)
	resp, page := c.do("GET", u.RequestURI(), nil)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, page)
	require.Contains(c.t, page, `id="portal-open"`)
	resp, page = c.do("POST", "/ui/portal/open", url.Values{"token": {u.Query().Get("token")}})
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode, page)
	require.Equal(c.t, "/ui/m/", resp.Header.Get("Location"))
	resp, page = c.do("GET", "/ui/m/", nil)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, page)
	return csrfOf(c.t, page)
}

func TestPortalLinkAPI(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	path := "/v1/merchants/" + itoa(m.ID) + "/portal-links"

	start := time.Now()
	status, out := apiCallBase(t, f.URL, "POST", path, testAdminToken, nil)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	require.True(t, strings.HasPrefix(out["url"].(string), f.URL+"/ui/portal/open?token="), out["url"])
	exp, err := time.Parse(time.RFC3339, out["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, start.Add(15*time.Minute), exp, 5*time.Second, "the default ttl is 15m")
	require.Equal(t, false, out["read_only"])
	first := out["url"].(string)

	for _, ttl := range []string{"30s", "25h", "soon", "-5m"} {
		status, out = apiCallBase(t, f.URL, "POST", path, testAdminToken, map[string]any{"ttl": ttl})
		require.Equal(t, http.StatusBadRequest, status, ttl)
		require.Contains(t, out["error"].(map[string]any)["message"], "ttl must be between 1m and 24h", ttl)
	}
	status, _ = apiCallBase(t, f.URL, "POST", path, testAdminToken, map[string]any{"ttl": "1m", "extra": 1})
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = apiCallBase(t, f.URL, "POST", "/v1/merchants/999999/portal-links", testAdminToken, nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = apiCallBase(t, f.URL, "POST", path, key, nil)
	require.Equal(t, http.StatusForbidden, status, "a merchant key makes no links")

	// The database keeps the token's hash, never the token.
	token := strings.TrimPrefix(first, f.URL+"/ui/portal/open?token=")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n, stored int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM portal_links WHERE merchant_id = $1", m.ID).Scan(&stored))
	require.Equal(t, 1, stored)
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT count(*) FROM portal_links WHERE position(convert_to($1, 'UTF8') IN token_sha256) > 0 OR encode(token_sha256, 'escape') LIKE '%' || $1 || '%'", token).Scan(&n))
	require.Zero(t, n)
}

func TestPortalLinkOpensOneSession(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, _ := dbtest.Merchant(t, f.store, &dbtest.MerchantOpts{Name: "Link Shop"})
	link := portalLink(t, f.URL, m.ID, false)
	u, err := url.Parse(link)
	require.NoError(t, err)
	token := u.Query().Get("token")

	// The landing page does not use the link (scanners and previews GET it).
	c := newUIClient(t, f.URL)
	for range 2 {
		resp, _ := c.do("GET", u.RequestURI(), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	// A post from another site is refused: no one logs a visitor into a
	// portal of their choosing.
	req, err := http.NewRequest("POST", f.URL+"/ui/portal/open", strings.NewReader(url.Values{"token": {token}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := c.hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	c.openPortal(link)
	resp, page := c.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Link Shop")
	ck := sessionCookieOf(t, c, f.URL)
	require.NotNil(t, ck)

	// Used once: a second opening fails, with the same token or in another browser.
	other := newUIClient(t, f.URL)
	resp, page = other.do("POST", "/ui/portal/open", url.Values{"token": {token}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, page)
	require.Contains(t, page, "used already")
	resp, _ = other.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// The session is a dashboard session like any other: listed, revocable.
	status, out := apiCallBase(t, f.URL, "GET", "/v1/sessions", testAdminToken, nil)
	require.Equal(t, http.StatusOK, status)
	items := out["items"].([]any)
	require.Len(t, items, 1)
	sess := items[0].(map[string]any)
	require.Equal(t, "merchant", sess["kind"])
	require.Equal(t, itoa(m.ID), sess["merchant_id"])
	status, _ = apiCallBase(t, f.URL, "DELETE", "/v1/sessions/"+sess["id"].(string), testAdminToken, nil)
	require.Equal(t, http.StatusNoContent, status)
	resp, _ = c.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a revoked portal session is dead")

	// Logout ends on a portal page, and the session is dead.
	c2 := newUIClient(t, f.URL)
	csrf := c2.openPortal(portalLink(t, f.URL, m.ID, false))
	resp, _ = c2.do("POST", "/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/portal/ended", resp.Header.Get("Location"))
	resp, page = c2.do("GET", "/ui/portal/ended", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="portal-ended"`)
	resp, _ = c2.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// Rotating the merchant's key voids the links not used yet.
	unused := portalLink(t, f.URL, m.ID, false)
	status, _ = apiCallBase(t, f.URL, "POST", "/v1/merchants/"+itoa(m.ID)+"/rotate-key", testAdminToken, nil)
	require.Equal(t, http.StatusOK, status)
	uu, _ := url.Parse(unused)
	resp, _ = newUIClient(t, f.URL).do("POST", "/ui/portal/open", url.Values{"token": {uu.Query().Get("token")}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// sessionCookieOf returns the session cookie the client's jar holds for base.
func sessionCookieOf(t *testing.T, c *uiClient, base string) *http.Cookie {
	t.Helper()
	u, err := url.Parse(base + "/ui/")
	require.NoError(t, err)
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "hr_session" {
			return ck
		}
	}
	return nil
}

func TestPortalEndpointForm(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	carrier, _ := dbtest.Carrier(t, f.store, nil)
	dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, EventTypes: []string{"delivered"}})
	c := newUIClient(t, f.URL)
	csrf := c.openPortal(portalLink(t, f.URL, m.ID, false))

	resp, page := c.do("GET", "/ui/m/endpoints/new", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<label for="url">`)
	require.Contains(t, page, `value="`+carrier.Name+`"`, "carriers are a pick list")
	require.Contains(t, page, `name="event_types" value="delivered"`, "known event types are a pick list")

	// A refused field: the API's message, next to the field, the form kept.
	form := url.Values{"csrf": {csrf}, "url": {"ftp://example.com/hook"}, "description": {"kept"}}
	resp, page = c.do("POST", "/ui/m/endpoints", form)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	status, out := apiCallBase(t, f.URL, "POST", "/v1/endpoints", key, map[string]any{"url": "ftp://example.com/hook"})
	require.Equal(t, http.StatusBadRequest, status)
	apiMsg := out["error"].(map[string]any)["message"].(string)
	require.Contains(t, html.UnescapeString(page), `<div class="field-error" id="url-error">`+apiMsg+`</div>`)
	require.Contains(t, page, `aria-invalid="true" autofocus`)
	require.Contains(t, page, ">kept</textarea>")

	for field, bad := range map[string]string{
		"max_in_flight":      "lots",
		"rate_limit_per_sec": "-1",
		"retry_schedule":     "5s, never",
		"timeout":            "3m",
		"payload_mode":       "pdf",
		"carriers":           "no-such-carrier",
		"batch":              "500 1s",
	} {
		form := url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/ok"}, field: {bad}}
		resp, page = c.do("POST", "/ui/m/endpoints", form)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, field)
		require.Contains(t, page, `id="`+field+`-error"`, field)
	}

	form = url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/new"}, "description": {"ERP"},
		"carriers": {carrier.Name}, "event_types": {"delivered"}, "event_types_other": {"in_transit, returned"},
		"payload_mode": {"reference"}, "retry_schedule": {"1s 5m"}, "rate_limit_per_sec": {"5"},
		"max_in_flight": {"3"}, "timeout": {"2s"}, "batch": {"20 2s"}}
	resp, _ = c.do("POST", "/ui/m/endpoints", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	id := strings.TrimSuffix(strings.TrimPrefix(loc, "/ui/m/endpoints/"), "?done=created")
	eps, err := f.store.EndpointList(context.Background(), m.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, eps, 2)
	ep := eps[1]
	require.Equal(t, itoa(ep.ID), id)
	require.Equal(t, "http://127.0.0.1:9/new", ep.URL)
	require.Equal(t, []int64{carrier.ID}, ep.CarrierIDs)
	require.Equal(t, []string{"delivered", "in_transit", "returned"}, ep.EventTypes)
	require.Equal(t, []time.Duration{time.Second, 5 * time.Minute}, ep.RetrySchedule)
	require.Equal(t, "reference", ep.PayloadMode)
	require.Equal(t, 5, ep.RateLimitPerSec)
	require.Equal(t, 3, ep.MaxInFlight)
	require.Equal(t, 2*time.Second, ep.Timeout)
	require.Equal(t, db.EndpointBatch{MaxEvents: 20, MaxWait: 2 * time.Second}, ep.Batch)
	resp, page = c.do("GET", loc, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Endpoint created.")

	// Edit: the form shows the values; unticking every carrier means all.
	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/edit", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `value="1s, 5m0s"`)
	require.Contains(t, page, `value="20 2s"`)
	require.Contains(t, page, `value="`+carrier.Name+`" checked`)
	form.Del("carriers")
	form.Set("description", "ERP v2")
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	got, err := f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Equal(t, "ERP v2", got.Description)
	require.Empty(t, got.CarrierIDs)
	require.Equal(t, 20, got.Batch.MaxEvents)
	form.Set("batch", "")
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	got, err = f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Zero(t, got.Batch, "an empty batch turns it off")

	// Disable, enable, delete.
	for _, step := range []struct{ path, status string }{{"/disable", db.EndpointDisabled}, {"/enable", db.EndpointEnabled}} {
		resp, _ = c.do("POST", "/ui/m/endpoints/"+id+step.path, url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, step.path)
		got, err = f.store.EndpointGet(context.Background(), ep.ID)
		require.NoError(t, err)
		require.Equal(t, step.status, got.Status, step.path)
	}
	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/deliveries?status=delivered", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "No delivered deliveries.")
	resp, _ = c.do("GET", "/ui/m/endpoints/"+id+"/deliveries?status=lost", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/delete", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="delete-confirm"`)
	resp, _ = c.do("POST", "/ui/m/endpoints/"+id+"/delete", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = c.do("GET", "/ui/m/endpoints/"+id, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// portalTargets are the portal's pages and actions on one endpoint and one
// delivery, with the form each action posts.
func portalTargets(epID, deliveryID, replayID string) (gets []string, posts map[string]url.Values) {
	now := time.Now().UTC()
	replay := url.Values{"since": {now.Add(-time.Hour).Format(uiTime)}, "until": {now.Add(time.Hour).Format(uiTime)}, "status": {"all"}}
	e := "/ui/m/endpoints/" + epID
	gets = []string{e, e + "/edit", e + "/delete", e + "/deliveries", e + "/replay",
		"/ui/m/deliveries/" + deliveryID, "/ui/m/replays/" + replayID}
	posts = map[string]url.Values{
		e: {"url": {"http://127.0.0.1:9/taken"}, "header_name": {"X-Taken"}, "header_value": {"v"},
			"header_keep": {"X-Api-Key"}, "header_remove": {"X-Api-Key"}, "auth_type": {"basic"}, "auth_username": {"u"},
			"signature": {"ed25519"}},
		e + "/enable":         {},
		e + "/disable":        {},
		e + "/reveal":         {},
		e + "/rotate":         {},
		e + "/test":           {},
		e + "/delete":         {},
		e + "/replay/confirm": replay,
		e + "/replay":         replay,
		"/ui/m/deliveries/" + deliveryID + "/retry": {},
		"/ui/m/replays/" + replayID + "/cancel":     {},
	}
	return gets, posts
}

func TestPortalMerchantIsolation(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m1, _ := dbtest.Merchant(t, f.store, nil)
	m2, _ := dbtest.Merchant(t, f.store, nil)
	ep2, secret2 := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m2.ID, URL: "http://127.0.0.1:9/theirs", Disabled: true})
	dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep2.ID}, OrderingKey: "THEIR-KEY"})
	pending, err := f.store.DeliveryListPendingNewest(context.Background(), ep2.ID, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	now := time.Now().UTC()
	status, out := apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+itoa(ep2.ID)+"/replay", testAdminToken,
		map[string]any{"since": now.Add(-time.Hour).Format(time.RFC3339), "until": now.Add(time.Hour).Format(time.RFC3339), "status": "all"})
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	replayID := out["id"].(string)
	before, err := f.store.EndpointGet(context.Background(), ep2.ID)
	require.NoError(t, err)

	c := newUIClient(t, f.URL)
	csrf := c.openPortal(portalLink(t, f.URL, m1.ID, false))
	gets, posts := portalTargets(itoa(ep2.ID), itoa(pending[0].ID), replayID)
	for _, p := range gets {
		resp, page := c.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		require.NotContains(t, page, "/theirs", p)
	}
	for p, form := range posts {
		form.Set("csrf", csrf)
		resp, page := c.do("POST", p, form)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		require.NotContains(t, page, secret2, p)
	}
	resp, page := c.do("GET", "/ui/m/messages?q=THEIR-KEY", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, page, "/ui/m/deliveries/"+itoa(pending[0].ID))
	resp, page = c.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, page, "/theirs")

	after, err := f.store.EndpointGet(context.Background(), ep2.ID)
	require.NoError(t, err)
	require.Equal(t, before, after, "nothing of theirs changed")
	secrets, err := f.store.EndpointSecretsActive(context.Background(), ep2.ID)
	require.NoError(t, err)
	require.Len(t, secrets, 1)
	require.Equal(t, secret2, secrets[0].Secret)
}

func TestPortalReadOnly(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, _ := dbtest.Merchant(t, f.store, nil)
	ep, secret := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: "http://127.0.0.1:9/mine"})
	dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}})
	pending, err := f.store.DeliveryListPendingNewest(context.Background(), ep.ID, 10)
	require.NoError(t, err)
	now := time.Now().UTC()
	status, out := apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+itoa(ep.ID)+"/replay", testAdminToken,
		map[string]any{"since": now.Add(-time.Hour).Format(time.RFC3339), "until": now.Add(time.Hour).Format(time.RFC3339), "status": "all"})
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	before, err := f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)

	c := newUIClient(t, f.URL)
	csrf := c.openPortal(portalLink(t, f.URL, m.ID, true))
	resp, page := c.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "/mine")
	require.Contains(t, page, "read-only")
	require.NotContains(t, page, `id="new-endpoint"`)
	resp, page = c.do("GET", "/ui/m/endpoints/"+itoa(ep.ID), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, id := range []string{`id="rotate"`, `id="reveal"`, `id="send-test"`, `id="edit"`, `id="disable"`, `id="delete"`} {
		require.NotContains(t, page, id)
	}

	gets, posts := portalTargets(itoa(ep.ID), itoa(pending[0].ID), out["id"].(string))
	for _, p := range gets {
		resp, _ := c.do("GET", p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
	posts["/ui/m/endpoints"] = url.Values{"url": {"http://127.0.0.1:9/new"}}
	for p, form := range posts {
		form.Set("csrf", csrf)
		resp, page := c.do("POST", p, form)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, p)
		require.Contains(t, page, "read-only", p)
		require.NotContains(t, page, secret, p)
	}
	after, err := f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Equal(t, before, after)
	eps, err := f.store.EndpointList(context.Background(), m.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, eps, 1)
	secrets, err := f.store.EndpointSecretsActive(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Len(t, secrets, 1)

	// Looking out is allowed.
	resp, _ = c.do("POST", "/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestPortalFramingHeaders(t *testing.T) {
	t.Parallel()
	const parent = "http://localhost:4321"
	framed := startWebFixture(t, fixtureOpts{FrameAncestors: []string{parent}})
	plain := startWebFixture(t, fixtureOpts{})
	for _, f := range []struct {
		fx     webFixture
		framed bool
	}{{framed, true}, {plain, false}} {
		m, _ := dbtest.Merchant(t, f.fx.store, nil)
		c := newUIClient(t, f.fx.URL)
		link := portalLink(t, f.fx.URL, m.ID, false)
		u, _ := url.Parse(link)
		resp, _ := c.do("GET", u.RequestURI(), nil)
		checkFraming(t, resp, f.framed, parent, "landing page")
		resp, _ = c.do("POST", "/ui/portal/open", url.Values{"token": {u.Query().Get("token")}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		var set *http.Cookie
		for _, ck := range resp.Cookies() {
			if ck.Name == "hr_session" {
				set = ck
			}
		}
		require.NotNil(t, set)
		if f.framed {
			require.Equal(t, http.SameSiteNoneMode, set.SameSite, "an iframe on another site gets the cookie")
			require.True(t, set.Secure, "SameSite=None needs Secure")
		} else {
			require.Equal(t, http.SameSiteStrictMode, set.SameSite)
		}
		resp, _ = c.do("GET", "/ui/m/", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		checkFraming(t, resp, f.framed, parent, "portal home")

		// Operator pages never are frameable.
		for _, p := range []string{"/ui/login", "/ui/"} {
			resp, _ = newUIClient(t, f.fx.URL).do("GET", p, nil)
			checkFraming(t, resp, false, parent, p)
		}
		oc := newUIClient(t, f.fx.URL)
		oc.login(testAdminToken)
		resp, _ = oc.do("GET", "/ui/endpoints", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		checkFraming(t, resp, false, parent, "operator endpoints")
	}
}

func checkFraming(t *testing.T, resp *http.Response, framed bool, parent, what string) {
	t.Helper()
	csp := resp.Header.Get("Content-Security-Policy")
	if framed {
		require.Contains(t, csp, "frame-ancestors "+parent+";", what)
		require.Empty(t, resp.Header.Get("X-Frame-Options"), what)
		return
	}
	require.Contains(t, csp, "frame-ancestors 'none'", what)
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), what)
}
