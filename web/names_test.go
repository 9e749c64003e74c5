package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// firstHour is a merchant "Acme Parcels" with an endpoint that takes its
// callbacks (one delivered, "SF100") and one that answers 500 (one dead
// letter, "SF500"), all from the carrier "sf-express": the pages a newcomer
// reads first.
type firstHour struct {
	f                 webFixture
	merchant          db.Merchant
	merchantKey       string
	carrier           db.Carrier
	good, bad         db.Endpoint
	delivered, dead   db.StoredMessage
	deliveredID, dlID string
}

func startFirstHour(t *testing.T) firstHour {
	t.Helper()
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)
	h := firstHour{f: startWebFixture(t, fixtureOpts{})}
	store := h.f.store
	h.merchant, h.merchantKey = dbtest.Merchant(t, store, &dbtest.MerchantOpts{Name: "Acme Parcels"})
	h.carrier, _ = dbtest.Carrier(t, store, &dbtest.CarrierOpts{Name: "sf-express"})
	h.good, _ = dbtest.Endpoint(t, store, &dbtest.EndpointOpts{MerchantID: h.merchant.ID, URL: recv.URL + "/ok",
		CarrierIDs: []int64{h.carrier.ID}})
	h.bad, _ = dbtest.Endpoint(t, store, &dbtest.EndpointOpts{MerchantID: h.merchant.ID, URL: recv.URL + "/fail",
		RetrySchedule: []time.Duration{100 * time.Millisecond}})
	h.delivered = dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: h.carrier.ID, EndpointIDs: []int64{h.good.ID},
		OrderingKey: "SF100", Payload: []byte(`{"tracking_no":"SF100","status":"delivered","note":"for Acme"}`)})
	h.dead = dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: h.carrier.ID, EndpointIDs: []int64{h.bad.ID}, OrderingKey: "SF500"})
	h.deliveredID, h.dlID = itoa(h.delivered.DeliveryIDs[0]), itoa(h.dead.DeliveryIDs[0])
	ctx := context.Background()
	testenv.Eventually(t, 30*time.Second, "one delivered, one dead letter", func() bool {
		pending, err := store.DeliveryListPending(ctx, h.good.ID, 0, 1)
		require.NoError(t, err)
		dead, err := dbtest.DeadLetterCountForEndpoint(ctx, store, h.bad.ID)
		require.NoError(t, err)
		return len(pending) == 0 && dead == 1
	})
	return h
}

// TestWebNamesBesideIDs: the operator's pages name merchants and carriers
// (ids beside them), keep "HTTP 500" whole, count attempts in good English,
// and a message page is not a dead letters page.
func TestWebNamesBesideIDs(t *testing.T) {
	t.Parallel()
	h := startFirstHour(t)
	const merchant, carrier = `<span class="name">Acme Parcels</span>`, `<span class="name">sf-express</span>`
	c := newUIClient(t, h.f.URL)
	c.login(testAdminToken)

	resp, page := c.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, merchant+` <span class="muted id">#`+itoa(h.merchant.ID)+`</span>`)
	require.Contains(t, page, `<td class="excerpt"><span class="status">HTTP 500</span></td>`, "a status is one unbreakable unit")

	resp, page = c.do("GET", "/ui/dead-letters", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, merchant)
	require.Contains(t, page, carrier+` <span class="muted id">#`+itoa(h.carrier.ID)+`</span>`)

	resp, page = c.do("GET", "/ui/messages?"+url.Values{"q": {"SF100"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, carrier)
	require.Contains(t, page, "(1 attempt, last HTTP 200)")
	require.NotContains(t, page, "1 attempts")

	resp, page = c.do("GET", "/ui/messages/"+itoa(h.delivered.ID), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, carrier)
	require.NotContains(t, page, `class="on"`, "no navigation entry is the message page's")

	// A delivered delivery: its merchant, carrier, tracking number and
	// payload; not a dead letter, so not under "Dead letters".
	resp, page = c.do("GET", "/ui/deliveries/"+h.deliveredID, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<dd id="delivery-merchant">`+merchant)
	require.Contains(t, page, `<dd id="delivery-carrier">`+carrier)
	require.Contains(t, page, `<dd id="delivery-ordering-key">SF100 `)
	require.Contains(t, page, `&#34;note&#34;: &#34;for Acme&#34;`)
	require.NotContains(t, page, `class="on"`)
	resp, page = c.do("GET", "/ui/deliveries/"+h.dlID, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "after 2 attempts")
	require.Contains(t, page, `<a href="/ui/dead-letters" class="on">`)

	// The merchant's session, by name, in the operator's list and in the
	// merchant's own header.
	mc := newUIClient(t, h.f.URL)
	mc.login(h.merchantKey)
	resp, page = c.do("GET", "/ui/sessions", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "merchant "+merchant)
	resp, page = mc.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "Log out (Acme Parcels)")
}

// TestPortalFirstHour: the portal's deliveries links say which deliveries
// they open, delivered rows have their tracking number, a delivery's page
// shows its payload and tracking number, search results name the carrier,
// and a used link offers no dashboard.
func TestPortalFirstHour(t *testing.T) {
	t.Parallel()
	h := startFirstHour(t)
	c := newUIClient(t, h.f.URL)
	link := portalLink(t, h.f.URL, h.merchant.ID, false)
	c.openPortal(link)
	id := itoa(h.good.ID)

	resp, page := c.do("GET", "/ui/m/endpoints/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.NotContains(t, page, "All deliveries")
	require.Contains(t, page, `href="/ui/m/endpoints/`+id+`/deliveries?status=pending" id="browse-deliveries">Pending deliveries…`)
	require.Contains(t, page, `href="/ui/m/endpoints/`+id+`/deliveries?status=delivered" id="browse-delivered">Delivered…`)
	require.Contains(t, page, `href="/ui/m/endpoints/`+id+`/deliveries?status=dead" id="browse-dead">Dead letters…`)

	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/deliveries?status=delivered", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<a href="/ui/m/deliveries/`+h.deliveredID+`">`)
	require.Contains(t, page, "<td>SF100</td>", "a delivered row has its ordering key")

	resp, page = c.do("GET", "/ui/m/deliveries/"+h.deliveredID, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<dd id="delivery-ordering-key">SF100 `)
	require.Contains(t, page, `<dd id="delivery-carrier"><span class="name">sf-express</span>`)
	require.Contains(t, page, `<pre id="payload">`)
	require.Contains(t, page, `&#34;note&#34;: &#34;for Acme&#34;`)
	require.NotContains(t, page, `id="delivery-merchant"`, "the merchant knows who it is")

	resp, page = c.do("GET", "/ui/m/messages?q=SF100", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<span class="name">sf-express</span>`)

	// The used link: the refusal says to ask for a new one, and offers
	// neither the dashboard nor its login.
	other := newUIClient(t, h.f.URL)
	u, err := url.Parse(link)
	require.NoError(t, err)
	resp, page = other.do("POST", "/ui/portal/open", url.Values{"token": {u.Query().Get("token")}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, page)
	require.Contains(t, page, "Ask for a new one")
	require.NotContains(t, page, "Back to the dashboard")
	require.NotContains(t, page, `href="/ui/login"`)
	require.NotContains(t, page, `href="/ui/"`)
}
