package web_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestWebShowsOrdering: the merchant's endpoint page says which ordering an
// endpoint has, and the operator's endpoint list marks those with "none"
// and those that sign with ed25519.
func TestWebShowsOrdering(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	keyed, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: "http://127.0.0.1:9/keyed"})
	loose, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: "http://127.0.0.1:9/loose", Ordering: db.OrderingNone})
	fields := db.EndpointFieldsOf(keyed)
	fields.Signature = hookrelay.SignatureEd25519
	_, err := f.store.EndpointUpdate(context.Background(), keyed.ID, fields, hookrelay.NewSigningKey())
	require.NoError(t, err)

	c := newUIClient(t, f.URL)
	c.login(key)
	resp, page := c.do("GET", "/ui/m/endpoints/"+strconv.FormatInt(keyed.ID, 10), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<dd id="ordering">key`)
	resp, page = c.do("GET", "/ui/m/endpoints/"+strconv.FormatInt(loose.ID, 10), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<dd id="ordering">none`)

	admin := newUIClient(t, f.URL)
	admin.login(testAdminToken)
	resp, page = admin.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `data-ordering="none"`)
	require.Equal(t, 1, strings.Count(page, `data-ordering="none"`), "only the endpoint with ordering none is marked")
	require.Equal(t, 1, strings.Count(page, `data-signature="ed25519"`), "only the endpoint that signs with ed25519 is marked")
}
