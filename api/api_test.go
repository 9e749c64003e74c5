package api_test

import (
	"context"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/throttle"
)

func TestAdminCarriersMerchantsAndPagination(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	c := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{
		"name": "yto", "ordering_key_field": "waybill.no", "signing_secret": "a-long-enough-secret",
	})
	require.Regexp(t, `^hrc_`, c["api_key"])
	require.IsType(t, "", c["id"], "ids are JSON strings")
	require.Equal(t, true, c["signed"])
	require.Equal(t, "waybill.no", c["ordering_key_field"])
	require.NotContains(t, c, "signing_secret")

	st, out := b.call(t, http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": "yto"})
	require.Equal(t, http.StatusConflict, st)
	require.Equal(t, "conflict", errCode(out))
	st, out = b.call(t, http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": ""})
	require.Equal(t, http.StatusBadRequest, st)
	require.Equal(t, "invalid", errCode(out))
	st, _ = b.call(t, http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": "x", "bogus": 1})
	require.Equal(t, http.StatusBadRequest, st, "unknown fields are refused")

	for _, n := range []string{"a", "b", "c"} {
		m := b.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": n})
		require.Regexp(t, `^hrm_`, m["api_key"])
	}
	var names []string
	cur := ""
	for range 5 {
		st, out := b.call(t, http.MethodGet, "/v1/merchants?limit=2&cursor="+cur, adminToken, nil)
		require.Equal(t, http.StatusOK, st)
		for _, it := range out["items"].([]any) {
			m := it.(map[string]any)
			require.NotContains(t, m, "api_key", "keys are shown once")
			names = append(names, m["name"].(string))
		}
		cur = out["next_cursor"].(string)
		if cur == "" {
			break
		}
	}
	require.Equal(t, []string{"a", "b", "c"}, names)
	st, out = b.call(t, http.MethodGet, "/v1/merchants?cursor=garbage!", adminToken, nil)
	require.Equal(t, http.StatusBadRequest, st, "%v", out)

	st, out = b.call(t, http.MethodGet, "/v1/carriers", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 1)
	stats := b.stats(t)
	require.Equal(t, float64(1), stats["carriers"])
	require.Equal(t, float64(3), stats["merchants"])
}

func TestAuthBoundaries(t *testing.T) {
	t.Parallel()
	// Dozens of unknown keys from one address, which no success forgives:
	// room for them all (the throttle has tests of its own).
	cfg := privateOK()
	cfg.Throttle = throttle.New(throttle.Config{Free: 1000})
	b := setup(t, cfg)
	w := b.world(t)
	// Unknown routes and methods use the same error shape.
	st, out := b.call(t, http.MethodGet, "/v1/nope", "", nil)
	require.Equal(t, http.StatusNotFound, st)
	require.Equal(t, "not_found", errCode(out))
	st, out = b.call(t, http.MethodDelete, "/v1/carriers", adminToken, nil)
	require.Equal(t, http.StatusMethodNotAllowed, st)
	require.Equal(t, "method_not_allowed", errCode(out))

	admin := []struct{ method, path string }{
		{http.MethodPost, "/v1/carriers"}, {http.MethodGet, "/v1/carriers"}, {http.MethodPost, "/v1/merchants"},
		{http.MethodGet, "/v1/merchants"}, {http.MethodGet, "/v1/stats"}, {http.MethodGet, "/v1/dead-letters"},
		{http.MethodPost, "/v1/dead-letters/retry"}, {http.MethodPost, "/v1/dead-letters/discard"},
	}
	for _, r := range admin {
		st, out := b.call(t, r.method, r.path, w.M1Key, map[string]any{})
		require.Equal(t, http.StatusForbidden, st, "merchant key on %s %s", r.method, r.path)
		require.Equal(t, "forbidden", errCode(out))
		st, _ = b.call(t, r.method, r.path, w.CarrierKey, map[string]any{})
		require.Equal(t, http.StatusForbidden, st, "carrier key on %s", r.path)
		st, _ = b.call(t, r.method, r.path, "", map[string]any{})
		require.Equal(t, http.StatusUnauthorized, st, "no key on %s", r.path)
		st, _ = b.call(t, r.method, r.path, "hra_wrong_token_value", map[string]any{})
		require.Equal(t, http.StatusUnauthorized, st, "wrong admin token on %s", r.path)
		st, _ = b.call(t, r.method, r.path, "hrm_forged", map[string]any{})
		require.Equal(t, http.StatusUnauthorized, st, "forged merchant key on %s", r.path)
	}
	st, _ = b.call(t, http.MethodGet, "/v1/endpoints", w.CarrierKey, nil)
	require.Equal(t, http.StatusForbidden, st)

	// Merchant isolation: the other merchant's endpoint is 404 everywhere.
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/endpoints/" + w.E2}, {http.MethodPatch, "/v1/endpoints/" + w.E2},
		{http.MethodDelete, "/v1/endpoints/" + w.E2}, {http.MethodPost, "/v1/endpoints/" + w.E2 + "/enable"},
		{http.MethodPost, "/v1/endpoints/" + w.E2 + "/disable"}, {http.MethodPost, "/v1/endpoints/" + w.E2 + "/rotate-secret"},
		{http.MethodPost, "/v1/endpoints/" + w.E2 + "/test"}, {http.MethodGet, "/v1/endpoints/" + w.E2 + "/deliveries"},
	} {
		st, out := b.call(t, r.method, r.path, w.M1Key, map[string]any{})
		require.Equal(t, http.StatusNotFound, st, "%s %s: %v", r.method, r.path, out)
	}
	st, out = b.call(t, http.MethodGet, "/v1/endpoints", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 1)
	require.Equal(t, w.E1, out["items"].([]any)[0].(map[string]any)["id"])
	// The admin sees both, or one merchant's.
	st, out = b.call(t, http.MethodGet, "/v1/endpoints", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 2)
	st, out = b.call(t, http.MethodGet, "/v1/endpoints?merchant_id="+w.M2, adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 1)
	st, _ = b.call(t, http.MethodGet, "/v1/endpoints/"+w.E2, adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	// A merchant cannot create an endpoint for another merchant.
	st, _ = b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/x", "merchant_id": w.M2})
	require.Equal(t, http.StatusForbidden, st)
	// The admin must name the merchant.
	st, _ = b.call(t, http.MethodPost, "/v1/endpoints", adminToken, map[string]any{"url": "http://127.0.0.1:9/x"})
	require.Equal(t, http.StatusBadRequest, st)
	b.mustCreate(t, "/v1/endpoints", adminToken, map[string]any{"url": "http://127.0.0.1:9/x", "merchant_id": w.M2})
	require.NotContains(t, b.Logs.String(), w.M1Key)
	require.NotContains(t, b.Logs.String(), w.CarrierKey)
}

func TestEndpointCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	ctx := context.Background()
	ep := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{
		"url": "http://127.0.0.1:9/hook", "carriers": []any{"sf", w.CarrierID}, "event_types": []string{"delivered"},
		"max_in_flight": 3, "rate_limit_per_sec": 5, "payload_mode": "reference",
		"retry_schedule": []string{"5s", "5m"}, "description": "d", "timeout": "3s",
	})
	require.Regexp(t, `^whsec_[A-Za-z0-9+/]{43}=$`, ep["secret"])
	require.Equal(t, "enabled", ep["status"])
	require.Equal(t, []any{"5s", "5m0s"}, ep["retry_schedule"])
	// Carriers are echoed as written: the name stays a name, the
	// id an id; carrier_names names them all.
	require.Equal(t, []any{"sf", w.CarrierID}, ep["carriers"])
	require.Equal(t, []any{"sf", "sf"}, ep["carrier_names"])
	require.Equal(t, "3s", ep["timeout"])
	id := ep["id"].(string)

	st, got := b.call(t, http.MethodGet, "/v1/endpoints/"+id, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.NotContains(t, got, "secret")
	require.Equal(t, []any{w.CarrierID, w.CarrierID}, got["carriers"], "a read shows ids")
	require.Equal(t, []any{"sf", "sf"}, got["carrier_names"])
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{"carriers": []any{w.CarrierID}})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, []any{w.CarrierID}, got["carriers"], "ids sent, ids back")
	require.Equal(t, []any{"sf"}, got["carrier_names"])

	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{"description": "new", "event_types": []string{}})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "new", got["description"])
	require.Equal(t, []any{}, got["event_types"])
	require.Equal(t, float64(3), got["max_in_flight"], "fields not sent are kept")
	require.Equal(t, []any{"5s", "5m0s"}, got["retry_schedule"])

	for _, bad := range []map[string]any{
		{"url": "ftp://x"}, {"max_in_flight": 0}, {"payload_mode": "x"}, {"retry_schedule": []string{"soon"}},
		{"carriers": []any{"nope"}}, {"timeout": "1h"}, {"rate_limit_per_sec": -1},
	} {
		st, out := b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, bad)
		require.Equal(t, http.StatusBadRequest, st, "%v: %v", bad, out)
	}

	st, got = b.call(t, http.MethodPost, "/v1/endpoints/"+id+"/disable", w.M1Key, map[string]any{"reason": "maintenance"})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "disabled", got["status"])
	st, got = b.call(t, http.MethodPost, "/v1/endpoints/"+id+"/enable", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "enabled", got["status"])

	st, rot := b.call(t, http.MethodPost, "/v1/endpoints/"+id+"/rotate-secret", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.NotEqual(t, ep["secret"], rot["secret"])
	secrets, err := b.DB.EndpointSecretsActive(ctx, id64(t, id))
	require.NoError(t, err)
	require.Len(t, secrets, 2, "the old secret keeps signing for 24 h")
	require.Equal(t, rot["secret"], secrets[0].Secret)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), *secrets[1].ExpiresAt, time.Minute)

	st, out := b.call(t, http.MethodPost, "/v1/endpoints/"+id+"/test", w.M1Key, nil)
	require.Equal(t, http.StatusServiceUnavailable, st, "no dispatch role here: %v", out)

	st, _ = b.call(t, http.MethodDelete, "/v1/endpoints/"+id, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	st, _ = b.call(t, http.MethodGet, "/v1/endpoints/"+id, w.M1Key, nil)
	require.Equal(t, http.StatusNotFound, st)
	st, _ = b.call(t, http.MethodGet, "/v1/endpoints/abc", w.M1Key, nil)
	require.Equal(t, http.StatusNotFound, st)
}

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &netError{}
}

type netError struct{}

func (*netError) Error() string { return "no such host" }

func TestEndpointURLValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: ops.Config{RequireHTTPS: true, Resolver: fakeResolver{
		"public.example":   {netip.MustParseAddr("93.184.216.34")},
		"sneaky.example":   {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.5")},
		"metadata.example": {netip.MustParseAddr("169.254.169.254")},
	}}})
	w := b.world2(t)
	for _, bad := range []string{
		"http://public.example/h", // https required
		"https://127.0.0.1/h", "https://10.1.2.3/h", "https://[::1]/h", "https://169.254.169.254/latest",
		"https://2130706433/h", "https://0x7f.1/h", "https://0177.0.0.1/h", "https://017700000001/h",
		"https://[::ffff:127.0.0.1]/h", "https://localhost/h", "https://sneaky.example/h", "https://metadata.example/h",
		"https://nowhere.example/h", "javascript:alert(1)", "https://user:pw@public.example/h", "", "https:///h",
	} {
		st, out := b.call(t, http.MethodPost, "/v1/endpoints", w, map[string]any{"url": bad})
		require.Equal(t, http.StatusBadRequest, st, "%q: %v", bad, out)
		require.NotEmpty(t, out["error"].(map[string]any)["message"])
	}
	b.mustCreate(t, "/v1/endpoints", w, map[string]any{"url": "https://public.example/h"})
	b.mustCreate(t, "/v1/endpoints", w, map[string]any{"url": "https://93.184.216.34:8443/h"})
}

// world2 makes a merchant only (no endpoints) and returns its key.
func (b *bundle) world2(t testing.TB) string {
	t.Helper()
	m := b.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "m"})
	return m["api_key"].(string)
}
