package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// Objects created by another process (here: straight in the database) are
// seen: keys at once (database fall-back), endpoints within the cache TTL.
func TestCacheSeesOtherProcessesChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets, Config: api.Config{CacheTTL: 50 * time.Millisecond}})
	_, key := dbtest.Carrier(t, b.DB, nil)
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", key, []byte(`{"tracking_no":"a"}`))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, float64(0), out["deliveries"])

	dbtest.Endpoint(t, b.DB, nil)
	require.Eventually(t, func() bool {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", key, []byte(`{"tracking_no":"a"}`))
		return st == http.StatusAccepted && out["deliveries"] == float64(1)
	}, 10*time.Second, 20*time.Millisecond)
}
