package web_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// waitForPartitionsAhead waits until the maintenance role has created the day
// partitions `ahead` days out: creating a partition locks its parent table,
// and callbacks stored meanwhile can hit a deadlock (reported to the
// maintenance and API work); the tests start their traffic after it.
func waitForPartitionsAhead(t *testing.T, store *db.DB, ahead int) {
	t.Helper()
	want := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, ahead)
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("maintenance to create the partitions %d days ahead", ahead), func() bool {
		parts, err := store.Partitions(context.Background())
		require.NoError(t, err)
		for _, p := range parts {
			if p.Parent == "idempotency_keys" && !p.Day.Before(want) {
				return true
			}
		}
		return false
	})
}

// uiClient is a browser-like HTTP client: a cookie jar, no redirects followed.
type uiClient struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newUIClient(t *testing.T, base string) *uiClient {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &uiClient{t: t, base: base, hc: &http.Client{
		Jar: jar, Timeout: 20 * time.Second, Transport: apitest.Wrap(t, nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (c *uiClient) do(method, path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	require.NoError(c.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method != http.MethodGet && method != http.MethodHead {
		// As a browser does on a post from the dashboard's own pages.
		req.Header.Set("Origin", c.base)
	}
	resp, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(b)
}

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	require.NotNil(t, m, "no CSRF token on the page")
	return m[1]
}

// login logs in with credential and returns the CSRF token of the landing page.
func (c *uiClient) login(credential string) string {
	c.t.Helper()
	_, page := c.do("GET", "/ui/login", nil)
	resp, _ := c.do("POST", "/ui/login", url.Values{"csrf": {csrfOf(c.t, page)}, "token": {credential}})
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode)
	resp, page = c.do("GET", resp.Header.Get("Location"), nil)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, page)
	return csrfOf(c.t, page)
}

func TestWebLoginHeadersAndCSRF(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	c := newUIClient(t, f.URL)

	resp, _ := c.do("GET", "/ui", nil)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
	resp, css := c.do("GET", "/ui/static/app.css", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/css")
	require.Contains(t, css, "--accent")
	resp, _ = c.do("GET", "/ui/static/../web.go", nil)
	require.NotEqual(t, http.StatusOK, resp.StatusCode)

	resp, _ = c.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "no session: to the login form")
	require.Equal(t, "/ui/login", resp.Header.Get("Location"))

	resp, page := c.do("GET", "/ui/login", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	require.NotContains(t, resp.Header.Get("Content-Security-Policy"), "unsafe-inline")
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.NotContains(t, page, "<script>", "no inline script")

	// A wrong token, and a right one without the login form's token, fail.
	resp, _ = c.do("POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {"hra_wrong_token_0123456789"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = c.do("POST", "/ui/login", url.Values{"csrf": {"forged"}, "token": {testAdminToken}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	csrf := c.login(testAdminToken)
	var session *http.Cookie
	u, _ := url.Parse(f.URL + "/ui/")
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "hr_session" {
			session = ck
		}
	}
	require.NotNil(t, session)

	for _, p := range []string{"/ui/", "/ui/endpoints", "/ui/dead-letters", "/ui/database"} {
		resp, page := c.do("GET", p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, page)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), p)
	}

	// A state-changing form without the session's CSRF token is refused.
	ep, _ := dbtest.Endpoint(t, f.store, nil)
	id := strconv.FormatInt(ep.ID, 10)
	resp, _ = c.do("POST", "/ui/endpoints/"+id+"/disable", url.Values{"csrf": {"nope"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	got, err := f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointEnabled, got.Status)

	resp, _ = c.do("POST", "/ui/endpoints/"+id+"/disable", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	got, err = f.store.EndpointGet(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointDisabled, got.Status)

	// Logging out ends the session.
	resp, _ = c.do("POST", "/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = c.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// A forged cookie does not authenticate.
	jar, _ := cookiejar.New(nil)
	jar.SetCookies(u, []*http.Cookie{{Name: "hr_session", Value: session.Value + "x", Path: "/ui"}})
	c.hc.Jar = jar
	resp, _ = c.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestWebMerchantIsolation(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m1, key1 := dbtest.Merchant(t, f.store, nil)
	m2, _ := dbtest.Merchant(t, f.store, nil)
	ep1, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m1.ID, URL: "http://127.0.0.1:9/mine"})
	ep2, secret2 := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m2.ID, URL: "http://127.0.0.1:9/theirs"})
	msg := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep2.ID}})
	_ = msg

	c := newUIClient(t, f.URL)
	csrf := c.login(key1)
	resp, page := c.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "/mine")
	require.NotContains(t, page, "/theirs")

	e1, e2 := strconv.FormatInt(ep1.ID, 10), strconv.FormatInt(ep2.ID, 10)
	resp, _ = c.do("GET", "/ui/m/endpoints/"+e1, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, page = c.do("GET", "/ui/m/endpoints/"+e2, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.NotContains(t, page, "/theirs")
	resp, page = c.do("POST", "/ui/m/endpoints/"+e2+"/reveal", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.NotContains(t, page, secret2)
	resp, _ = c.do("POST", "/ui/m/endpoints/"+e2+"/rotate", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Their delivery is not found either.
	pending, err := f.store.DeliveryListPendingNewest(context.Background(), ep2.ID, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	resp, _ = c.do("GET", "/ui/m/deliveries/"+strconv.FormatInt(pending[0].ID, 10), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = c.do("POST", "/ui/m/deliveries/"+strconv.FormatInt(pending[0].ID, 10)+"/retry", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Operator pages are forbidden; the overview sends a merchant home.
	resp, _ = c.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/m/", resp.Header.Get("Location"))
	for _, p := range []string{"/ui/endpoints", "/ui/dead-letters", "/ui/database", "/ui/deliveries/" + strconv.FormatInt(pending[0].ID, 10)} {
		resp, _ := c.do("GET", p, nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, p)
	}
	resp, _ = c.do("POST", "/ui/endpoints/"+e2+"/disable", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	got, err := f.store.EndpointGet(context.Background(), ep2.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointEnabled, got.Status)

	// Their own secret can be revealed; the page is not cached.
	ep1Secrets, err := f.store.EndpointSecretsActive(context.Background(), ep1.ID)
	require.NoError(t, err)
	resp, page = c.do("POST", "/ui/m/endpoints/"+e1+"/reveal", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, html.UnescapeString(page), ep1Secrets[0].Secret)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
}

var payloadLinkRe = regexp.MustCompile(`id="payload-link" href="([^"]+)"|href="([^"]+)" rel="noreferrer" id="payload-link"`)

func TestWebMessagePayloadsAndSecretRotation(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{OffloadBytes: 1024})
	ctx := context.Background()
	m, key := dbtest.Merchant(t, f.store, nil)
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID})
	// The endpoint points at a closed port; disable it so nothing is attempted.
	_, err := f.store.EndpointDisable(ctx, ep.ID, "test")
	require.NoError(t, err)

	small := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID},
		Payload: []byte(`{"tracking_no":"SF1","items":[1,2]}`)})
	c := newUIClient(t, f.URL)
	c.login(testAdminToken)
	resp, page := c.do("GET", "/ui/messages/"+strconv.FormatInt(small.ID, 10), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "&#34;items&#34;: [\n    1,", "pretty-printed JSON")

	// An offloaded payload is shown as a presigned link that serves its bytes.
	_, carrierKey := dbtest.Carrier(t, f.store, nil)
	big := `{"tracking_no":"SF2","label":"` + strings.Repeat("x", 4000) + `"}`
	req, err := http.NewRequest(http.MethodPost, f.URL+"/v1/callbacks", strings.NewReader(big))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+carrierKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Merchant-Id", strconv.FormatInt(m.ID, 10))
	presp, err := apitest.Client(t).Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	require.Equal(t, http.StatusAccepted, presp.StatusCode, string(body))
	idm := regexp.MustCompile(`"message_id":"?(\d+)`).FindStringSubmatch(string(body))
	require.NotNil(t, idm, string(body))
	resp, page = c.do("GET", "/ui/messages/"+idm[1], nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `id="payload-offloaded"`)
	lm := payloadLinkRe.FindStringSubmatch(page)
	require.NotNil(t, lm, page)
	link := strings.ReplaceAll(lm[1]+lm[2], "&amp;", "&")
	lresp, err := http.Get(link)
	require.NoError(t, err)
	got, _ := io.ReadAll(lresp.Body)
	lresp.Body.Close()
	require.Equal(t, http.StatusOK, lresp.StatusCode)
	require.Equal(t, big, string(got))

	// A merchant rotates its secret: the new one is shown beside the old.
	before, err := f.store.EndpointSecretsActive(ctx, ep.ID)
	require.NoError(t, err)
	mc := newUIClient(t, f.URL)
	csrf := mc.login(key)
	resp, page = mc.do("POST", "/ui/m/endpoints/"+strconv.FormatInt(ep.ID, 10)+"/rotate", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	after, err := f.store.EndpointSecretsActive(ctx, ep.ID)
	require.NoError(t, err)
	require.Len(t, after, len(before)+1)
	require.Contains(t, html.UnescapeString(page), after[0].Secret)
	require.Contains(t, html.UnescapeString(page), before[0].Secret)
	require.NotNil(t, after[1].ExpiresAt, "the old secret expires")

	// The merchant retries its own delivery waiting for its next attempt (a
	// refused connection put it 5 s out): it becomes due now.
	failing, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: "http://127.0.0.1:9/refused"})
	msg := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{failing.ID}})
	did := strconv.FormatInt(msg.DeliveryIDs[0], 10)
	testenv.Eventually(t, 60*time.Second, "the delivery's first attempt", func() bool {
		v, err := f.store.DeliveryRead(ctx, msg.DeliveryIDs[0])
		require.NoError(t, err)
		return v.Pending != nil && v.Pending.Attempt >= 1 && v.Pending.VisibleAt.After(time.Now())
	})
	resp, page = mc.do("GET", "/ui/m/deliveries/"+did, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="retry-delivery"`)
	resp, page = mc.do("POST", "/ui/m/deliveries/"+did+"/retry", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	require.Equal(t, "/ui/m/deliveries/"+did+"?done=retry", resp.Header.Get("Location"))
	resp, page = mc.do("GET", resp.Header.Get("Location"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Delivery queued for retry.")
	// Read the row itself: the views show a leased row as due at the end of
	// its lease, and the dispatcher may already be attempting it again.
	conn, err := pgx.Connect(ctx, f.dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var attempt int
	var dueNow bool
	err = conn.QueryRow(ctx, "SELECT attempt, visible_at <= now() FROM deliveries WHERE id = $1",
		msg.DeliveryIDs[0]).Scan(&attempt, &dueNow)
	if !errors.Is(err, pgx.ErrNoRows) { // else already delivered or dead
		require.NoError(t, err)
		require.True(t, attempt >= 2 || dueNow, "due now (attempt %d)", attempt)
	}
}

// TestWebParkedDelivery: a delivery parked behind an earlier one of its key
// (here the head of a disabled endpoint, which the dispatcher holds) shows as
// held on the operator's and the merchant's pages, not as a date.
func TestWebParkedDelivery(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, mkey := dbtest.Merchant(t, f.store, nil)
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: "http://127.0.0.1:9/held", Disabled: true})
	var ids []int64
	for range 2 {
		ids = append(ids, dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "WP1"}).DeliveryIDs[0])
	}
	require.Eventually(t, func() bool {
		counts, err := dbtest.DeliveryQueueCounts(context.Background(), f.store)
		require.NoError(t, err)
		return len(counts) == 1 && counts[0].Parked == 1
	}, 20*time.Second, 20*time.Millisecond, "the dispatcher never parked the second delivery")

	parked := strconv.FormatInt(ids[1], 10)
	c := newUIClient(t, f.URL)
	c.login(testAdminToken)
	resp, page := c.do("GET", "/ui/deliveries/"+parked, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "held (behind an earlier delivery")
	require.NotContains(t, page, "9000-01-01")

	mc := newUIClient(t, f.URL)
	mc.login(mkey)
	resp, page = mc.do("GET", "/ui/m/endpoints/"+strconv.FormatInt(ep.ID, 10), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "<td>held</td>")
	require.NotContains(t, page, "9000-01-01")
}
