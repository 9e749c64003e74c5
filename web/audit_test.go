package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// Logins, failed logins, logouts and message pages are in the audit log,
// which the Audit log page searches; merchants may not open it.
func TestWebAuditLog(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ep, _ := dbtest.Endpoint(t, f.store, nil)
	msg := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}})
	c := newUIClient(t, f.URL)

	_, page := c.do("GET", "/ui/login", nil)
	resp, _ := c.do("POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {"hra_wrong_token_0123456789"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	csrf := c.login(testAdminToken)
	resp, _ = c.do("GET", "/ui/messages/"+strconv.FormatInt(msg.ID, 10), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = c.do("POST", "/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	es, err := f.store.AuditList(context.Background(), db.AuditFilter{}, 0, 100)
	require.NoError(t, err)
	var got []string
	for _, e := range es {
		got = append(got, e.Action+" "+e.Result)
	}
	require.Equal(t, []string{"login.failed unauthorized", "login ok", "message.read ok", "logout ok"}, got)
	require.Equal(t, []string{"anonymous", "break_glass", "break_glass"}, []string{es[0].ActorKind, es[1].ActorKind, es[3].ActorKind})
	require.Equal(t, strconv.FormatInt(msg.ID, 10), es[2].TargetID)
	require.Equal(t, "127.0.0.1", es[0].Addr)
	require.NotZero(t, es[1].ActorSessionID)
	require.Equal(t, es[1].ActorSessionID, es[3].ActorSessionID)

	c.login(testAdminToken)
	resp, page = c.do("GET", "/ui/audit?action=login.", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<td class="audit-action">login.failed</td>`)
	require.NotContains(t, page, `<td class="audit-action">message.read</td>`)
	resp, _ = c.do("GET", "/ui/audit?since=yesterday", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	_, key := dbtest.Merchant(t, f.store, nil)
	m := newUIClient(t, f.URL)
	m.login(key)
	resp, _ = m.do("GET", "/ui/audit", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
