package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
)

// The dashboard's search box, given a key PostgreSQL cannot take as text
// (invalid UTF-8, NUL, an overlong UTF-8 encoding), answers 400 with the
// reason, for the operator and for a merchant, never a 500 from a failed
// statement.
func TestWebSearchRefusesBadTextWith400(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	_, key := dbtest.Merchant(t, f.store, nil)
	admin := newUIClient(t, f.URL)
	admin.login(testAdminToken)
	merchant := newUIClient(t, f.URL)
	merchant.login(key)
	for _, c := range []struct {
		client *uiClient
		path   string
	}{{admin, "/ui/messages"}, {merchant, "/ui/m/messages"}} {
		for _, q := range []string{"%ff%fe", "a%00b", "%c0%af"} {
			resp, page := c.client.do("GET", c.path+"?q="+q, nil)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s?q=%s: %s", c.path, q, page)
			require.Contains(t, page, "ordering_key", "%s?q=%s: the page says what is wrong", c.path, q)
		}
	}
}
