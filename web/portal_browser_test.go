package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// parentPage serves, on a loopback port of its own, a page that embeds
// whatever URL ?src= names in an iframe: the merchant console of a platform
// that embeds the portal. It answers as http://localhost:<port>, another
// site than the portal's http://127.0.0.1:<port>, so the iframe is
// cross-site as it would be in production.
func parentPage(t *testing.T) (origin string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Platform console</title><h1>Platform console</h1>
<iframe id="portal" title="Webhooks" src="%s" width="1200" height="760"></iframe>`, strings.ReplaceAll(r.URL.Query().Get("src"), `"`, "&quot;"))
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
}

// frameTarget waits for the iframe target whose URL starts with prefix and
// whose document has sel; it returns a context that acts in it, or nil when
// none shows sel within wait.
func frameTarget(t *testing.T, bctx context.Context, prefix, sel string, wait time.Duration) context.Context {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		infos, err := chromedp.Targets(bctx)
		require.NoError(t, err)
		for _, info := range infos {
			if info.Type != "iframe" || !strings.HasPrefix(info.URL, prefix) {
				continue
			}
			fctx, cancel := chromedp.NewContext(bctx, chromedp.WithTargetID(info.TargetID))
			t.Cleanup(cancel)
			// Attach with the context itself: the first run's context
			// holds the attachment, and the wait below has a deadline.
			if err := chromedp.Do(fctx); err != nil {
				continue
			}
			qctx, qcancel := context.WithTimeout(fctx, 2*time.Second)
			err := chromedp.Do(qctx, chromedp.WaitVisible(chromedp.CSS(sel)))
			qcancel()
			if err == nil {
				return fctx
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

func TestPortalBrowser(t *testing.T) {
	t.Parallel()
	snk := &sink{got: map[string][]string{}}
	hs := httptest.NewServer(snk)
	t.Cleanup(hs.Close)
	allowed := parentPage(t)
	refused := parentPage(t)

	f := startWebFixture(t, fixtureOpts{FrameAncestors: []string{allowed}, Replays: true})
	waitForPartitionsAhead(t, f.store, 1)
	m, _ := dbtest.Merchant(t, f.store, &dbtest.MerchantOpts{Name: "Acme Parcels"})
	carrier, carrierKey := dbtest.Carrier(t, f.store, nil)
	b := newBrowser(t)

	// A page of no origin (a data: document; a sandboxed iframe's is the
	// same, Origin: null) posts a link's open form at once: refused, so it
	// cannot log the visitor into the portal of its choosing, and the link
	// is not spent (it opens below).
	link := portalLink(t, f.URL, m.ID, false)
	lu, err := url.Parse(link)
	require.NoError(t, err)
	forged := `<form method="post" action="` + f.URL + `/ui/portal/open"><input name="token" value="` + lu.Query().Get("token") +
		`"></form><script>document.forms[0].submit()</script>`
	browse(t, b, chromedp.Navigate("data:text/html,"+url.PathEscape(forged)), chromedp.WaitVisible(chromedp.CSS("main")))
	require.Contains(t, text(t, b, "main"), "This form must be submitted from "+f.URL)

	// Open the magic link: no key typed, straight into the portal.
	browse(t, b, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#new-endpoint")))
	require.Contains(t, text(t, b, "h1"), "Acme Parcels")

	// The Events page: the catalog, each type with its schema and examples.
	createTrackingUpdated(t, f.store)
	browse(t, b, chromedp.Click(chromedp.CSS(`header a[href="/ui/m/events"]`)), chromedp.WaitVisible(chromedp.CSS("#event-catalog")))
	require.Contains(t, text(t, b, `[id="event-tracking.updated"] h2`), "tracking.updated")
	require.Contains(t, text(t, b, `[id="event-tracking.updated"] .description`), "A parcel's tracking status changed.")
	require.Contains(t, text(t, b, `[id="event-tracking.updated"] .schema-json`), `"format": "date-time"`)
	require.Contains(t, text(t, b, `[id="event-tracking.updated"] .example`), `"tracking_number": "SF7700112233"`)
	screenshot(t, b, "portal-events")
	browse(t, b, chromedp.Click(chromedp.CSS(`header a[href="/ui/m/"]`)), chromedp.WaitVisible(chromedp.CSS("#new-endpoint")))

	// Create an endpoint through the form: first a refused URL, shown next
	// to its field with the focus on it, then a good one.
	browse(t, b, chromedp.Click(chromedp.CSS("#new-endpoint")), chromedp.WaitVisible(chromedp.CSS("#endpoint-form")),
		chromedp.SendKeys(chromedp.CSS("#url"), "ftp://example.com/hook"),
		chromedp.SendKeys(chromedp.CSS("#description"), "Warehouse ERP"),
		chromedp.Click(chromedp.CSS(`input[name="carriers"][value="`+carrier.Name+`"]`)),
		chromedp.SendKeys(chromedp.CSS("#event_types_other"), "in_transit, delivered"),
		chromedp.Click(chromedp.CSS("#endpoint-save")), chromedp.WaitVisible(chromedp.CSS("#url-error")))
	require.Contains(t, text(t, b, "#url-error"), "url must be an http or https URL")
	// autofocus applies at the next rendering opportunity, not at once.
	testenv.Eventually(t, 30*time.Second, "the focus on the field in error", func() bool {
		return value(t, b, chromedp.Evaluate[string](`document.activeElement.id`)) == "url"
	})
	require.Equal(t, "Warehouse ERP", value(t, b, chromedp.Evaluate[string](`document.getElementById("description").value`)), "the form keeps what was typed")
	screenshot(t, b, "portal-form-error")
	// A custom header whose name is not an HTTP token: refused next to
	// the headers, what was typed kept.
	browse(t, b, chromedp.Clear(chromedp.CSS("#url")), chromedp.SendKeys(chromedp.CSS("#url"), hs.URL+"/portal"),
		chromedp.SendKeys(chromedp.CSS("#header-name-0"), "X Api Key"),
		chromedp.SendKeys(chromedp.CSS("#header-value-0"), "k-browser-7f3a"),
		chromedp.Click(chromedp.CSS("#endpoint-save")), chromedp.WaitVisible(chromedp.CSS("#headers-error")))
	require.Contains(t, text(t, b, "#headers-error"), `headers: "X Api Key" holds a character not allowed in a header name`)
	require.Equal(t, "X Api Key", value(t, b, chromedp.Evaluate[string](`document.getElementById("header-name-0").value`)))
	screenshot(t, b, "portal-form-headers")
	// Then a good header and basic credentials.
	browse(t, b, chromedp.Clear(chromedp.CSS("#header-name-0")), chromedp.SendKeys(chromedp.CSS("#header-name-0"), "X-Api-Key"),
		chromedp.SetValue(chromedp.CSS("#auth_type"), "basic"),
		chromedp.SendKeys(chromedp.CSS("#auth_username"), "erp-user"),
		chromedp.SendKeys(chromedp.CSS("#auth_password"), "erp-pass-5d1c"),
		chromedp.SendKeys(chromedp.CSS("#retry_schedule"), "1s"),
		chromedp.Click(chromedp.CSS("#endpoint-save")), chromedp.WaitVisible(chromedp.CSS("#send-test")))
	require.Contains(t, text(t, b, "#flash"), "Endpoint created.")
	eps, err := f.store.EndpointList(context.Background(), m.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, eps, 1)
	ep := eps[0]
	require.Equal(t, []int64{carrier.ID}, ep.CarrierIDs)
	require.Equal(t, []string{"in_transit", "delivered"}, ep.EventTypes)

	// Send a test and see the answer; rotate the secret.
	browse(t, b, chromedp.Click(chromedp.CSS("#send-test")), chromedp.WaitVisible(chromedp.CSS("#ping-result")))
	require.Contains(t, text(t, b, "#ping-result"), "HTTP 200")
	got := snk.headers("/portal")
	require.Len(t, got, 1, "the test ping")
	require.Equal(t, "k-browser-7f3a", got[0].Get("X-Api-Key"), "the header set in the form reaches the receiver")
	require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("erp-user:erp-pass-5d1c")), got[0].Get("Authorization"))
	browse(t, b, chromedp.Click(chromedp.CSS("#rotate")), chromedp.WaitVisible(chromedp.CSS("#rotated")))
	secrets, err := f.store.EndpointSecretsActive(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Len(t, secrets, 2)
	screenshot(t, b, "portal-endpoint")

	// A callback is delivered; then replay it from the portal. The API's
	// routing snapshot follows an endpoint made in the portal within its
	// TTL (1 s; the fixture does not LISTEN for changes), and a callback
	// posted before then reaches no endpoint (its answer says "deliveries":
	// 0): post until one is routed, so exactly one delivery is made.
	testenv.Eventually(t, 30*time.Second, "a callback routed to the new endpoint", func() bool {
		req, err := http.NewRequest(http.MethodPost, f.URL+"/v1/callbacks", strings.NewReader(`{"tracking_no":"PORTAL-1","status":"delivered"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+carrierKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := apitest.Client(t).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		var out struct {
			Deliveries int `json:"deliveries"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out.Deliveries == 1
	})
	// The sink has the test ping; then the delivery, acknowledged.
	testenv.Eventually(t, 30*time.Second, "the delivery", func() bool {
		p, err := f.store.DeliveryListPending(context.Background(), ep.ID, 0, 1)
		require.NoError(t, err)
		return len(snk.received("/portal")) == 2 && len(p) == 0
	})
	// The form proposes the last day up to this minute; the delivery is
	// of this minute, so the window ends an hour ahead.
	browse(t, b, chromedp.Click(chromedp.CSS("#replay")), chromedp.WaitVisible(chromedp.CSS("#replay-form")))
	until := time.Now().UTC().Add(time.Hour).Format(uiTime)
	value(t, b, chromedp.Evaluate[string](`document.getElementById("until").value = "`+until+`"`))
	browse(t, b, chromedp.Click(chromedp.CSS("#replay-count")), chromedp.WaitVisible(chromedp.CSS("#confirm-count")),
		chromedp.Click(chromedp.CSS("#replay-start")), chromedp.WaitVisible(chromedp.CSS("#replay-state")))
	eventually(t, b, "the replay to finish", func() bool {
		return text(t, b, "#replay-state") == "finished"
	})
	testenv.Eventually(t, 30*time.Second, "the replayed delivery", func() bool { return len(snk.received("/portal")) == 3 })
	browse(t, b, chromedp.Navigate(f.URL+fmt.Sprintf("/ui/m/endpoints/%d/deliveries?status=delivered", ep.ID)),
		chromedp.WaitVisible(chromedp.CSS("#deliveries")))
	require.Contains(t, text(t, b, "#deliveries"), "PORTAL-1", "delivered rows have their ordering key")
	screenshot(t, b, "portal-deliveries")

	// Log out: the session is dead and the link does not open another.
	browse(t, b, chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#portal-ended")))
	browse(t, b, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("main")))
	eventually(t, b, "the used link's refusal", func() bool {
		return strings.Contains(text(t, b, "main"), "used already")
	})
	require.NotContains(t, text(t, b, "main"), "Back to the dashboard", "a merchant sent by its platform has no dashboard")
	browse(t, b, chromedp.Navigate(f.URL+"/ui/m/"), chromedp.WaitVisible(chromedp.CSS("#token")))

	// Embedded by the allowed origin: the portal works inside the iframe,
	// its session cookie too (SameSite=None; Secure on loopback http).
	browse(t, b, chromedp.Navigate(allowed+"/?src="+portalLink(t, f.URL, m.ID, false)), chromedp.WaitVisible(chromedp.CSS("#portal")))
	inner := frameTarget(t, b, f.URL, "#my-endpoints", waitLimit)
	require.NotNil(t, inner, "the portal did not open inside the allowed iframe")
	require.Contains(t, text(t, inner, "#my-endpoints"), hs.URL+"/portal")
	browse(t, inner, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/ui/m/endpoints/%d"]`, ep.ID))), chromedp.WaitVisible(chromedp.CSS("#send-test")),
		chromedp.Click(chromedp.CSS("#send-test")), chromedp.WaitVisible(chromedp.CSS("#ping-result")))
	require.Contains(t, text(t, inner, "#ping-result"), "HTTP 200", "a form (CSRF token and cookie) works in the iframe")
	// The viewport's capture: it composites the iframe's own process,
	// which the full-page capture leaves blank.
	saveScreenshot(t, "portal-embedded", value(t, b, chromedp.CaptureScreenshot()))

	// Embedded by any other origin: refused by the browser.
	browse(t, b, chromedp.Navigate(refused+"/?src="+portalLink(t, f.URL, m.ID, false)), chromedp.WaitVisible(chromedp.CSS("#portal")))
	require.Nil(t, frameTarget(t, b, f.URL, "#portal-open, #my-endpoints", 5*time.Second), "the portal showed inside a refused iframe")
}
