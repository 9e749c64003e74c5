package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestWebCarriers: the carriers page lists each carrier with its callbacks
// accepted and refused; a carrier's page shows a refusal with its reason
// and excerpt, filters by reason, and tries samples (in a browser).
func TestWebCarriers(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	st, swift := apiCallBase(t, f.URL, http.MethodPost, "/v1/carriers", testAdminToken, map[string]any{"name": "Swift Couriers"})
	require.Equal(t, http.StatusCreated, st)
	id := swift["id"].(string)
	m, _ := dbtest.Merchant(t, f.store, &dbtest.MerchantOpts{Name: "Acme Parcels"})
	dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: "http://127.0.0.1:9/acme"})

	var sender map[string]any
	resp := apiDo(t, http.DefaultClient, http.MethodPost, f.URL+"/v1/carriers", testAdminToken, map[string]any{"name": "Parcel Post"}, &sender)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	senderID, key := sender["id"].(string), sender["api_key"].(string)
	st, out := apiCallBase(t, f.URL, http.MethodPost, "/v1/callbacks", key, map[string]any{"tracking_no": "PP1", "status": "picked_up"})
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	st, out = apiCallBase(t, f.URL, http.MethodPost, "/v1/callbacks", key, map[string]any{"status": "delivered", "note": "no tracking number"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)

	// Without the CSRF token the form is refused.
	ui := newUIClient(t, f.URL)
	ui.login(testAdminToken)
	r, _ := ui.do("POST", "/ui/carriers/"+senderID+"/try", url.Values{"body": {`{"tracking_no":"x"}`}})
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	r, page := ui.do("GET", "/ui/carriers/999999", nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode, page)
	r, page = ui.do("GET", "/ui/carriers/"+senderID, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, page)
	for _, action := range []string{"disable", "enable", "rotate-key", "edit", "delete"} {
		r, _ = ui.do("POST", "/ui/carriers/"+senderID+"/"+action, url.Values{"force": {"true"}})
		require.Equal(t, http.StatusForbidden, r.StatusCode, action)
	}

	bctx := newBrowser(t)
	login(t, bctx, f.URL, testAdminToken, "#overview-cards")
	browse(t, bctx, chromedp.Navigate(f.URL+"/ui/carriers"), chromedp.WaitVisible(chromedp.CSS("#carrier-"+senderID)))
	require.Contains(t, text(t, bctx, "#carrier-"+id), "Swift Couriers")
	eventually(t, bctx, "the carrier's counts", func() bool {
		return text(t, bctx, "#carrier-"+senderID+" .accepted") == "1" && text(t, bctx, "#carrier-"+senderID+" .refused") == "1"
	})
	require.Contains(t, text(t, bctx, "#carrier-"+senderID), "missing_ordering_key 1")
	require.Equal(t, "active", text(t, bctx, "#carrier-"+senderID+" .carrier-status"))
	require.Equal(t, "none", text(t, bctx, "#carrier-"+senderID+" .carrier-signature"))
	screenshot(t, bctx, "carriers")

	browse(t, bctx, chromedp.Click(chromedp.CSS("#carrier-"+senderID+" td a")), chromedp.WaitVisible(chromedp.CSS("#carrier-config")))
	eventually(t, bctx, "the refusal on the carrier's page", func() bool {
		return strings.Contains(text(t, bctx, "#refusals"), "missing_ordering_key")
	})
	require.Contains(t, text(t, bctx, "#refusals"), `missing ordering key: send X-Ordering-Key or a string or number at "tracking_no"`)
	require.Contains(t, text(t, bctx, "#refusals"), "400")
	excerpt := value(t, bctx, chromedp.TextContent(chromedp.CSS("#refusals .body-excerpt")))
	require.Contains(t, excerpt, `"note":"no tracking number"`)
	headers := value(t, bctx, chromedp.TextContent(chromedp.CSS("#refusals .headers")))
	require.Contains(t, headers, "Content-Type: application/json")
	require.NotContains(t, headers, "Authorization")
	require.NotContains(t, headers, key)

	// The filter: another reason shows none.
	browse(t, bctx, chromedp.SetValue(chromedp.CSS("#reason"), "parse"), chromedp.Click(chromedp.CSS("#refusal-filter button")),
		chromedp.WaitVisible(chromedp.CSS("#refusals td.muted")))
	require.Contains(t, text(t, bctx, "#refusals"), "No refusals of reason parse")

	// Try an accepted sample, then a refused one.
	browse(t, bctx,
		chromedp.SetValue(chromedp.CSS("#try-body"), `{"tracking_no":"PP9","status":"delivered"}`),
		chromedp.SetValue(chromedp.CSS("#try-headers"), "X-Merchant-Id: Acme Parcels"),
		chromedp.Click(chromedp.CSS("#try-submit")),
		chromedp.WaitVisible(chromedp.CSS("#try-result")),
	)
	require.Equal(t, "PP9", text(t, bctx, "#try-ordering-key"))
	require.Equal(t, "1", text(t, bctx, "#try-endpoint-count"))
	require.Contains(t, text(t, bctx, "#try-endpoints"), "http://127.0.0.1:9/acme")
	screenshot(t, bctx, "carrier")
	browse(t, bctx,
		chromedp.Navigate(f.URL+"/ui/carriers/"+senderID),
		chromedp.WaitVisible(chromedp.CSS("#try-form")),
		chromedp.SetValue(chromedp.CSS("#try-body"), `{"tracking_no":`),
		chromedp.Click(chromedp.CSS("#try-submit")),
		chromedp.WaitVisible(chromedp.CSS("#try-refusal")),
	)
	require.Contains(t, text(t, bctx, "#try-refusal"), "parse")
	require.Contains(t, text(t, bctx, "#try-refusal"), "400")

	// Nothing the tries sent was stored: one message in all.
	var msgs map[string]any
	resp = apiDo(t, http.DefaultClient, http.MethodGet, f.URL+"/v1/messages?carrier_id="+senderID, testAdminToken, nil, &msgs)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, msgs["items"], 1)

	testCarrierLifecycle(t, f, bctx, senderID, key)
}

// testCarrierLifecycle runs the actions of a carrier's page in the browser:
// disable and enable, rotate its key (shown once), edit, delete (refused
// while callbacks are undelivered, then forced).
func testCarrierLifecycle(t *testing.T, f webFixture, bctx context.Context, id, key string) {
	page := "/ui/carriers/" + id
	callback := func(key string) int {
		st, _ := apiCallBase(t, f.URL, http.MethodPost, "/v1/callbacks", key, map[string]any{"tracking_no": "PP2", "status": "in_transit"})
		return st
	}
	// The intake reads carriers from its routes' snapshot, refreshed within
	// moments of a change.
	answers := func(key string, status int, what string) {
		t.Helper()
		testenv.Eventually(t, waitLimit, what, func() bool { return callback(key) == status })
	}

	// Disable: the page says so, the list too, and its callbacks get 403.
	browse(t, bctx, chromedp.Navigate(f.URL+page), chromedp.WaitVisible(chromedp.CSS("#carrier-disable")))
	require.Equal(t, "active", text(t, bctx, "#carrier-status"))
	browse(t, bctx, chromedp.Click(chromedp.CSS("#carrier-disable")), chromedp.WaitVisible(chromedp.CSS("#disabled-note")))
	require.Equal(t, "disabled", text(t, bctx, "#carrier-status"))
	require.Contains(t, text(t, bctx, "#flash"), "Carrier disabled")
	answers(key, http.StatusForbidden, "a disabled carrier's callback refused")
	browse(t, bctx, chromedp.Navigate(f.URL+"/ui/carriers"), chromedp.WaitVisible(chromedp.CSS("#carrier-"+id)))
	require.Equal(t, "disabled", text(t, bctx, "#carrier-"+id+" .carrier-status"))
	browse(t, bctx, chromedp.Navigate(f.URL+page), chromedp.Click(chromedp.CSS("#carrier-enable")), chromedp.WaitVisible(chromedp.CSS("#carrier-disable")))
	require.Equal(t, "active", text(t, bctx, "#carrier-status"))
	require.Contains(t, text(t, bctx, "#flash"), "Carrier enabled")
	answers(key, http.StatusAccepted, "an enabled carrier's callback taken")

	// Rotate: a bad overlap is refused on the page; then the new key is
	// shown once, works, and the old one still does during the overlap.
	browse(t, bctx, chromedp.SetValue(chromedp.CSS("#overlap"), "a day"), chromedp.Click(chromedp.CSS("#carrier-rotate")),
		chromedp.WaitVisible(chromedp.CSS("#action-error")))
	require.Contains(t, text(t, bctx, "#action-error"), "not a duration")
	browse(t, bctx, chromedp.SetValue(chromedp.CSS("#overlap"), "24h"), chromedp.Click(chromedp.CSS("#carrier-rotate")), chromedp.WaitVisible(chromedp.CSS("#new-key")))
	require.Contains(t, text(t, bctx, "#new-key"), "copy it now")
	newKey := text(t, bctx, "#new-key-value")
	require.NotEqual(t, key, newKey)
	require.True(t, strings.HasPrefix(newKey, "hrc_"), newKey)
	answers(newKey, http.StatusAccepted, "the new key taken")
	require.Equal(t, http.StatusAccepted, callback(key), "the old key works during the overlap")
	browse(t, bctx, chromedp.Navigate(f.URL+page), chromedp.WaitVisible(chromedp.CSS("#carrier-config")))
	html := value(t, bctx, chromedp.OuterHTML(chromedp.CSS("html")))
	require.NotContains(t, html, newKey, "the new key is shown once")
	require.NotContains(t, html, "new-key")

	// Edit: a refusal names the field on the form; then the change shows.
	browse(t, bctx, chromedp.Click(chromedp.CSS("#carrier-edit")), chromedp.WaitVisible(chromedp.CSS("#carrier-form")),
		chromedp.SetValue(chromedp.CSS("#allowed_cidrs"), "127.0.0.1/8"),
		chromedp.Click(chromedp.CSS("#carrier-save")), chromedp.WaitVisible(chromedp.CSS("#cidrs-error")))
	require.Contains(t, text(t, bctx, "#cidrs-error"), "127.0.0.0/8")
	const secret = "carrier-shared-secret-0123"
	browse(t, bctx,
		chromedp.SetValue(chromedp.CSS("#allowed_cidrs"), "127.0.0.0/8\n::1"),
		chromedp.SetValue(chromedp.CSS("#ordering_key_field"), "data.waybill"),
		chromedp.SetValue(chromedp.CSS("#signature"), `{"scheme": "hmac", "algorithm": "sha1", "encoding": "base64", "header": "X-Carrier-Signature"}`),
		chromedp.Click(chromedp.CSS("#carrier-save")), chromedp.WaitVisible(chromedp.CSS("#sig-error")))
	require.Contains(t, text(t, bctx, "#sig-error"), "secret")
	screenshot(t, bctx, "carrier-edit")
	browse(t, bctx,
		chromedp.SetValue(chromedp.CSS("#signature_secret"), secret),
		chromedp.Click(chromedp.CSS("#carrier-save")), chromedp.WaitVisible(chromedp.CSS("#carrier-config")))
	require.Contains(t, text(t, bctx, "#flash"), "Carrier saved")
	require.Contains(t, text(t, bctx, "#carrier-config"), "data.waybill")
	sig := text(t, bctx, "#config-signature")
	require.Contains(t, sig, "hmac")
	require.Contains(t, sig, "X-Carrier-Signature")
	require.Contains(t, sig, "base64 HMAC-SHA1")
	require.Equal(t, "127.0.0.0/8, ::1/128", text(t, bctx, "#config-cidrs"))
	require.NotContains(t, value(t, bctx, chromedp.OuterHTML(chromedp.CSS("html"))), secret)
	browse(t, bctx, chromedp.Navigate(f.URL+page+"/edit"), chromedp.WaitVisible(chromedp.CSS("#carrier-form")))
	require.NotContains(t, value(t, bctx, chromedp.OuterHTML(chromedp.CSS("html"))), secret, "the edit form keeps the secret to itself")

	// Delete: refused while a callback it sent is undelivered (its
	// endpoint is disabled), with the count; then forced.
	m, _ := dbtest.Merchant(t, f.store, nil)
	held, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, Disabled: true})
	carrierID, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err)
	dbtest.Message(t, f.store, &dbtest.MessageOpts{CarrierID: carrierID, EndpointIDs: []int64{held.ID}})
	browse(t, bctx, chromedp.Navigate(f.URL+page), chromedp.Click(chromedp.CSS("#carrier-delete")), chromedp.WaitVisible(chromedp.CSS("#confirm-delete")),
		chromedp.Click(chromedp.CSS("#carrier-delete-confirm")), chromedp.WaitVisible(chromedp.CSS("#delete-refused")))
	n, err := strconv.Atoi(text(t, bctx, "#undelivered-count"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	screenshot(t, bctx, "carrier-delete")
	browse(t, bctx, chromedp.Click(chromedp.CSS("#carrier-delete-force")), chromedp.WaitVisible(chromedp.CSS("#carriers")))
	require.Contains(t, text(t, bctx, "#flash"), "Carrier deleted")
	require.Contains(t, text(t, bctx, "#flash"), "still delivered")
	require.False(t, value(t, bctx, chromedp.Evaluate[bool](`document.getElementById("carrier-`+id+`") !== null`)))
	ui := newUIClient(t, f.URL)
	ui.login(testAdminToken)
	r, body := ui.do("GET", page, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode, body)
	answers(newKey, http.StatusUnauthorized, "a deleted carrier's key refused")
}
