package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every value that becomes a text column is checked at the door: a NUL
// (escaped in JSON or not) or invalid UTF-8 is a 400 naming the field, and
// nothing of the request is stored.
func TestCallbackPoisonFieldsAre400(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	nested := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{
		"name": "nested", "ordering_key_field": "shipment.no", "event_type_field": "shipment.event", "merchant_field": "shop.id"})
	nKey := nested["api_key"].(string)

	cases := []struct {
		name  string
		token string
		body  string
		hdr   []string
		field string // the message names it
	}{
		{"escaped NUL in the ordering key", w.CarrierKey, `{"tracking_no":"A\u0000B"}`, nil, `"tracking_no"`},
		{"escaped NUL in the event type", w.CarrierKey, `{"tracking_no":"a","status":"x\u0000"}`, nil, `"status"`},
		{"escaped NUL in the merchant field", w.CarrierKey, `{"tracking_no":"a","merchant_id":"\u0000"}`, nil, `"merchant_id"`},
		{"escaped NUL at a nested path", nKey, `{"shipment":{"no":"a\u0000"}}`, nil, `"shipment.no"`},
		{"escaped NUL in a nested event type", nKey, `{"shipment":{"no":"a","event":"\u0000x"}}`, nil, `"shipment.event"`},
		{"escaped NUL in a nested merchant field", nKey, `{"shipment":{"no":"a"},"shop":{"id":"m\u0000"}}`, nil, `"shop.id"`},
		{"invalid UTF-8 Idempotency-Key", w.CarrierKey, `{"tracking_no":"a"}`, []string{"Idempotency-Key", "\xff\xfe"}, "Idempotency-Key"},
		{"invalid UTF-8 X-Ordering-Key", w.CarrierKey, `{"tracking_no":"a"}`, []string{"X-Ordering-Key", "\xff\xfe"}, "X-Ordering-Key"},
		{"invalid UTF-8 X-Event-Type", w.CarrierKey, `{"tracking_no":"a"}`, []string{"X-Event-Type", "ok\xff\xfe"}, "X-Event-Type"},
		{"invalid UTF-8 X-Merchant-Id", w.CarrierKey, `{"tracking_no":"a"}`, []string{"X-Merchant-Id", "\xc3"}, "X-Merchant-Id"},
		{"invalid UTF-8 in a body string", w.CarrierKey, "{\"tracking_no\":\"\xff\xfe\"}", nil, "JSON"},
		// U+0001 first marks a replay chain (hookrelay.ReplayChainMark).
		{"ordering key beginning with U+0001", w.CarrierKey, `{"tracking_no":"\u0001A"}`, nil, `"tracking_no"`},
	}
	for _, tc := range cases {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", tc.token, []byte(tc.body), tc.hdr...)
		require.Equal(t, http.StatusBadRequest, st, "%s: %v", tc.name, out)
		require.Equal(t, "invalid", errCode(out), tc.name)
		require.Contains(t, out["error"].(map[string]any)["message"], tc.field, tc.name)
	}
	require.Equal(t, float64(0), b.stats(t)["messages_today_utc"], "nothing of a refused callback is stored")

	// U+0001 further in is refused as well, like every control character
	// but tab: the ordering key goes into a header of every delivery, and
	// no header can carry one (TestCallbackControlCharactersAre400).
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"A\u0001"}`))
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	require.Contains(t, out["error"].(map[string]any)["message"], `"tracking_no"`)

	// A NUL elsewhere in the body is fine: the payload is stored as bytes.
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"a","note":"x\u0000y"}`))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, float64(1), b.stats(t)["messages_today_utc"])
}

// The admin API checks its text fields the same way: 400 naming the field,
// never a 500 from the database.
func TestAdminPoisonFieldsAre400(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	cases := []struct {
		name, method, path, token string
		body                      map[string]any
		field                     string
	}{
		{"carrier name", http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": "a\x00b"}, "name"},
		{"carrier ordering key field", http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": "c1", "ordering_key_field": "no\x00"}, "ordering_key_field"},
		{"carrier event type field", http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": "c2", "event_type_field": "\x00"}, "event_type_field"},
		{"carrier merchant field", http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": "c3", "merchant_field": "m\x00"}, "merchant_field"},
		{"carrier signing secret", http.MethodPost, "/v1/carriers", adminToken, map[string]any{"name": "c4", "signing_secret": "0123456789abcdef\x00"}, "signing_secret"},
		{"merchant name", http.MethodPost, "/v1/merchants", adminToken, map[string]any{"name": "shop\x00"}, "name"},
		{"endpoint description", http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/x", "description": "d\x00"}, "description"},
		{"endpoint event types", http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/x", "event_types": []string{"ok", "de\x00livered"}}, "event_types"},
		{"endpoint url", http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/\x00"}, "url"},
		{"patched description", http.MethodPatch, "/v1/endpoints/" + w.E1, w.M1Key, map[string]any{"description": "\x00"}, "description"},
		{"patched event types", http.MethodPatch, "/v1/endpoints/" + w.E1, w.M1Key, map[string]any{"event_types": []string{"\x00"}}, "event_types"},
		{"disable reason", http.MethodPost, "/v1/endpoints/" + w.E1 + "/disable", w.M1Key, map[string]any{"reason": "because\x00"}, "reason"},
	}
	for _, tc := range cases {
		st, out := b.call(t, tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, http.StatusBadRequest, st, "%s: %v", tc.name, out)
		require.Equal(t, "invalid", errCode(out), tc.name)
		require.Contains(t, out["error"].(map[string]any)["message"], tc.field, tc.name)
	}
	stats := b.stats(t)
	require.Equal(t, float64(1), stats["carriers"], "only the world's carrier")
	require.Equal(t, float64(2), stats["merchants"])
	st, ep := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "enabled", ep["status"])
	require.Equal(t, "", ep["description"])
}
