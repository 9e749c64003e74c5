package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
)

func TestWebSearchBoxFindsAMessage(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ctx := context.Background()
	m1, key1 := dbtest.Merchant(t, f.store, nil)
	m2, _ := dbtest.Merchant(t, f.store, nil)
	ep1, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m1.ID})
	ep2, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m2.ID})
	// The endpoints point at a closed port; disabled, nothing is attempted.
	for _, id := range []int64{ep1.ID, ep2.ID} {
		_, err := f.store.EndpointDisable(ctx, id, "test")
		require.NoError(t, err)
	}
	mine := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep1.ID}, OrderingKey: "SF777"})
	theirs := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep2.ID}, OrderingKey: "SF777"})
	dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep1.ID}, OrderingKey: "SF778"})
	mineID, theirsID := strconv.FormatInt(mine.ID, 10), strconv.FormatInt(theirs.ID, 10)

	// The operator: the box is on every page; the results link to the message pages.
	c := newUIClient(t, f.URL)
	c.login(testAdminToken)
	for _, p := range []string{"/ui/", "/ui/endpoints", "/ui/dead-letters"} {
		resp, page := c.do("GET", p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		require.Contains(t, page, `action="/ui/messages" class="search"`, p)
	}
	resp, page := c.do("GET", "/ui/messages?"+url.Values{"q": {"SF777"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `href="/ui/messages/`+mineID+`?at=`)
	require.Contains(t, page, `href="/ui/messages/`+theirsID+`?at=`)
	require.NotContains(t, page, "SF778")
	resp, page = c.do("GET", "/ui/messages/"+mineID, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `id="message-deliveries"`)
	require.Contains(t, page, `<span class="badge pending">pending</span>`)
	resp, page = c.do("GET", "/ui/messages?q=NOPE", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="search-empty"`)

	// A merchant finds only its own message, linked to its delivery page.
	mc := newUIClient(t, f.URL)
	mc.login(key1)
	resp, page = mc.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `action="/ui/m/messages" class="search"`)
	resp, page = mc.do("GET", "/ui/m/messages?q=SF777", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "msg_"+mineID)
	require.NotContains(t, page, "msg_"+theirsID)
	require.Contains(t, page, `href="/ui/m/deliveries/`+strconv.FormatInt(mine.DeliveryIDs[0], 10)+`"`)
	resp, _ = mc.do("GET", "/ui/messages?q=SF777", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the operator's search is the operator's")
}
