package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestPollEndpointLagShown: a poll endpoint shows as one, without a URL,
// circuit or test ping, with what it has not acknowledged, in the
// dashboard's endpoint list and in the portal's.
func TestPollEndpointLagShown(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	m, key := dbtest.Merchant(t, f.store, nil)
	status, out := apiCallBase(t, f.URL, "POST", "/v1/endpoints", key, map[string]any{"type": "poll"})
	require.Equal(t, http.StatusCreated, status, "%v", out)
	id := fmt.Sprint(out["id"])
	var epID int64
	_, err := fmt.Sscan(id, &epID)
	require.NoError(t, err)
	dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{epID}})
	dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{epID}})

	admin := newUIClient(t, f.URL)
	admin.login(testAdminToken)
	resp, page := admin.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `data-type="poll"`)
	require.Contains(t, page, `data-lag>not acknowledged since`)

	c := newUIClient(t, f.URL)
	csrf := c.openPortal(portalLink(t, f.URL, m.ID, false))
	resp, page = c.do("GET", "/ui/m/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "poll endpoint")
	require.Contains(t, page, `data-lag>not acknowledged since`)
	resp, page = c.do("GET", "/ui/m/endpoints/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="lag">2, the oldest received`)
	require.Contains(t, page, "/v1/endpoints/"+id+"/events")
	require.NotContains(t, page, `id="send-test"`)

	// Its edit form has no URL, and saves.
	resp, page = c.do("GET", "/ui/m/endpoints/"+id+"/edit", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, page, `name="url"`)
	resp, page = c.do("POST", "/ui/m/endpoints/"+id, url.Values{"csrf": {csrf}, "description": {"the ERP"}, "ordering": {"key"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	ep, err := f.store.EndpointGet(context.Background(), epID)
	require.NoError(t, err)
	require.Equal(t, "the ERP", ep.Description)
	require.Equal(t, db.EndpointPoll, ep.Type)
}
