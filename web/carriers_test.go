package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
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

	bctx := newBrowser(t)
	login(t, bctx, f.URL, testAdminToken, "#overview-cards")
	browse(t, bctx, chromedp.Navigate(f.URL+"/ui/carriers"), chromedp.WaitVisible(chromedp.CSS("#carrier-"+senderID)))
	require.Contains(t, text(t, bctx, "#carrier-"+id), "Swift Couriers")
	eventually(t, bctx, "the carrier's counts", func() bool {
		return text(t, bctx, "#carrier-"+senderID+" .accepted") == "1" && text(t, bctx, "#carrier-"+senderID+" .refused") == "1"
	})
	require.Contains(t, text(t, bctx, "#carrier-"+senderID), "missing_ordering_key 1")
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
}
