package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/testenv"
)

// hmacHex is the hex HMAC-SHA256 of body under secret.
func hmacHex(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

// errMessage returns the message of an error answer.
func errMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func TestCarrierGetAndPatch(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	const secret = "first-secret-0123456789"
	c := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "zto",
		"signature": map[string]any{"scheme": "hmac", "algorithm": "sha1", "encoding": "base64", "header": "X-Zto-Sign", "secret": secret}})
	id, key := c["id"].(string), c["api_key"].(string)
	require.Equal(t, true, c["signed"])
	require.Equal(t, map[string]any{"scheme": "hmac", "algorithm": "sha1", "message": "body", "encoding": "base64", "header": "X-Zto-Sign"}, c["signature"])
	require.NotContains(t, c, "secret")

	st, got := b.call(t, http.MethodGet, "/v1/carriers/"+id, adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "zto", got["name"])
	require.Equal(t, "active", got["status"])
	require.Nil(t, got["api_key"])
	require.Equal(t, []any{}, got["allowed_cidrs"])
	st, out := b.call(t, http.MethodGet, "/v1/carriers/999999", adminToken, nil)
	require.Equal(t, http.StatusNotFound, st, "%v", out)
	st, out = b.call(t, http.MethodGet, "/v1/carriers/"+id, key, nil)
	require.Equal(t, http.StatusForbidden, st, "a carrier key may not read carriers: %v", out)

	// The field mapping, name and rate limit change; the signature's
	// declaration changes while its secret (not sent) stays.
	st, got = b.call(t, http.MethodPatch, "/v1/carriers/"+id, adminToken, map[string]any{
		"name": "zto-express", "ordering_key_field": "shipment.no", "event_type_field": "shipment.state", "rate_limit_per_sec": 50,
		"signature": map[string]any{"scheme": "hmac", "header": "X-Zto-Sign", "prefix": "sha256="},
	})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "zto-express", got["name"])
	require.Equal(t, "shipment.no", got["ordering_key_field"])
	require.Equal(t, "shipment.state", got["event_type_field"])
	require.Equal(t, float64(50), got["rate_limit_per_sec"])
	require.Equal(t, "sha256", got["signature"].(map[string]any)["algorithm"])

	// The next callback follows the change.
	body := `{"shipment":{"no":"ZT100","state":"picked_up"}}`
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", key, []byte(body), "X-Zto-Sign", "sha256="+hmacHex(secret, body))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", key, []byte(body), "X-Zto-Sign", hmacHex(secret, body))
	require.Equal(t, http.StatusUnauthorized, st, "%v", out)

	// A Standard Webhooks secret is of another kind: not kept.
	st, out = b.call(t, http.MethodPatch, "/v1/carriers/"+id, adminToken, map[string]any{"signature": map[string]any{"scheme": "standard-webhooks"}})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	require.Equal(t, "signature.secret is required for scheme standard-webhooks, in the form whsec_<base64>", errMessage(out))

	// signing_secret: "" removes the signature.
	st, got = b.call(t, http.MethodPatch, "/v1/carriers/"+id, adminToken, map[string]any{"signing_secret": ""})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, false, got["signed"])
	require.Equal(t, map[string]any{"scheme": "none"}, got["signature"])
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", key, []byte(body))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.NotContains(t, b.Logs.String(), secret)
}

func TestCarrierPatchValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	c := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "yto"})
	b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "sto"})
	path := "/v1/carriers/" + c["id"].(string)
	for _, tc := range []struct {
		body   map[string]any
		status int
		want   string // in the message
	}{
		{map[string]any{"name": "sto"}, 409, `a carrier named "sto" exists`},
		{map[string]any{"ordering_key_field": ".no"}, 400, "ordering_key_field must be a dot path"},
		{map[string]any{"rate_limit_per_sec": 2_000_000}, 400, "rate_limit_per_sec"},
		{map[string]any{"allowed_cidrs": []string{"203.0.113.5/24"}}, 400, `allowed_cidrs[0] "203.0.113.5/24" has bits set after the prefix length; did you mean "203.0.113.0/24"?`},
		{map[string]any{"allowed_cidrs": []string{"10.0.0.0/8", "localhost"}}, 400, `allowed_cidrs[1] "localhost" is not an address or CIDR prefix`},
		{map[string]any{"signature": map[string]any{"scheme": "hmac", "secret": "short"}}, 400, "signature.secret is required for scheme hmac: at least 16 characters"},
		{map[string]any{"signature": map[string]any{"scheme": "hmac", "message": "timestamp+body", "secret": "0123456789abcdef"}}, 400, "signature.timestamp_header is required with message timestamp+body"},
		{map[string]any{"signature": map[string]any{"scheme": "standard-webhooks", "secret": "0123456789abcdef"}}, 400, "signature.secret is required for scheme standard-webhooks, in the form whsec_<base64>"},
		{map[string]any{"signature": map[string]any{"scheme": "hmac", "tolerance": "soon", "secret": "0123456789abcdef"}}, 400, "signature.tolerance must be a positive duration"},
		{map[string]any{"signature": map[string]any{"scheme": "hmac", "header": "X-A", "query": "sign", "secret": "0123456789abcdef"}}, 400, "signature.header and signature.query exclude each other"},
		{map[string]any{"signature": map[string]any{"scheme": "none"}, "signing_secret": "0123456789abcdef"}, 400, "signing_secret and signature exclude each other"},
		{map[string]any{"signing_secret": "short"}, 400, "signing_secret must be at least 16 characters"},
		{map[string]any{"signature": map[string]any{"algorithm": "md5"}}, 400, "signature.scheme is required"},
		{map[string]any{"signature": map[string]any{"scheme": "hmac", "secret": "0123456789abcdef", "algoritm": "md5"}}, 400, `signature: unknown field "algoritm"`},
		{map[string]any{"status": "paused"}, 400, "status"},
	} {
		st, out := b.call(t, http.MethodPatch, path, adminToken, tc.body)
		require.Equal(t, tc.status, st, "%v: %v", tc.body, out)
		require.Contains(t, errMessage(out), tc.want, "%v", tc.body)
	}
	// Nothing changed.
	st, got := b.call(t, http.MethodGet, path, adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "yto", got["name"])
	require.Equal(t, false, got["signed"])
}

func TestCarrierDisableEnable(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	path := "/v1/carriers/" + w.CarrierID
	body := []byte(`{"tracking_no":"SF1"}`)
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)

	st, got := b.call(t, http.MethodPost, path+"/disable", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "disabled", got["status"])
	require.NotNil(t, got["disabled_at"])
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body)
	require.Equal(t, http.StatusForbidden, st, "%v", out)
	require.Equal(t, "forbidden", errCode(out))
	require.Equal(t, "carrier disabled: its callbacks are refused until an operator enables it again", errMessage(out))

	// A change of other fields leaves it disabled.
	st, got = b.call(t, http.MethodPatch, path, adminToken, map[string]any{"rate_limit_per_sec": 100})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "disabled", got["status"])

	st, got = b.call(t, http.MethodPost, path+"/enable", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "active", got["status"])
	require.Nil(t, got["disabled_at"])
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)

	// PATCH status does the same.
	st, got = b.call(t, http.MethodPatch, path, adminToken, map[string]any{"status": "disabled"})
	require.Equal(t, http.StatusOK, st, "%v", got)
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body)
	require.Equal(t, http.StatusForbidden, st, "%v", out)
	st, _ = b.call(t, http.MethodPatch, path, adminToken, map[string]any{"status": "active"})
	require.Equal(t, http.StatusOK, st)
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)

	st, out = b.call(t, http.MethodPost, "/v1/carriers/424242/disable", adminToken, nil)
	require.Equal(t, http.StatusNotFound, st, "%v", out)
}

func TestCarrierRotateKey(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	path := "/v1/carriers/" + w.CarrierID + "/rotate-key"
	body := []byte(`{"tracking_no":"SF1"}`)
	callback := func(key string) int {
		st, _ := b.call(t, http.MethodPost, "/v1/callbacks", key, body)
		return st
	}

	for _, bad := range []map[string]any{{"overlap": "-1s"}, {"overlap": "721h"}, {"overlap": "soon"}, {}} {
		st, out := b.call(t, http.MethodPost, path, adminToken, bad)
		require.Equal(t, http.StatusBadRequest, st, "%v: %v", bad, out)
		require.Contains(t, errMessage(out), "overlap", "%v", bad)
	}

	// With an overlap, the old key works beside the new one.
	st, rot := b.call(t, http.MethodPost, path, adminToken, map[string]any{"overlap": "24h"})
	require.Equal(t, http.StatusOK, st, "%v", rot)
	k2 := rot["api_key"].(string)
	require.NotEqual(t, w.CarrierKey, k2)
	exp, err := time.Parse(time.RFC3339, rot["previous_key_expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), exp, time.Minute)
	require.Equal(t, http.StatusAccepted, callback(w.CarrierKey))
	require.Equal(t, http.StatusAccepted, callback(k2))
	_, got := b.call(t, http.MethodGet, "/v1/carriers/"+w.CarrierID, adminToken, nil)
	require.Equal(t, rot["api_key_prefix"], got["api_key_prefix"])

	// "0s": the key it replaces stops at once, and so do the keys in
	// their overlap.
	st, rot = b.call(t, http.MethodPost, path, adminToken, map[string]any{"overlap": "0s"})
	require.Equal(t, http.StatusOK, st, "%v", rot)
	k3 := rot["api_key"].(string)
	require.Equal(t, http.StatusUnauthorized, callback(k2))
	require.Equal(t, http.StatusUnauthorized, callback(w.CarrierKey))
	require.Equal(t, http.StatusAccepted, callback(k3))

	// A short overlap: accepted now, refused once it ends.
	st, rot = b.call(t, http.MethodPost, path, adminToken, map[string]any{"overlap": "5s"})
	require.Equal(t, http.StatusOK, st, "%v", rot)
	k4 := rot["api_key"].(string)
	require.Equal(t, http.StatusAccepted, callback(k3))
	require.Equal(t, http.StatusAccepted, callback(k4))
	testenv.Eventually(t, 20*time.Second, "the old key refused after the overlap", func() bool {
		return callback(k3) == http.StatusUnauthorized
	})
	require.Equal(t, http.StatusAccepted, callback(k4))

	st, out := b.call(t, http.MethodPost, "/v1/carriers/77777/rotate-key", adminToken, map[string]any{"overlap": "0s"})
	require.Equal(t, http.StatusNotFound, st, "%v", out)
}

func TestCarrierDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	path := "/v1/carriers/" + w.CarrierID

	// A carrier with nothing undelivered goes at once.
	idle := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "idle"})
	st, out := b.call(t, http.MethodDelete, "/v1/carriers/"+idle["id"].(string), adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, float64(0), out["undelivered"])

	// Two callbacks, two endpoints each; no dispatcher runs here, so the
	// deliveries stay pending.
	for _, k := range []string{"SF1", "SF2"} {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"`+k+`"}`))
		require.Equal(t, http.StatusAccepted, st, "%v", out)
	}
	st, out = b.call(t, http.MethodDelete, path, adminToken, nil)
	require.Equal(t, http.StatusConflict, st, "%v", out)
	require.Equal(t, "conflict", errCode(out))
	require.Equal(t, "carrier has 4 undelivered callbacks; delete with force=true to delete it anyway (they are still delivered)", errMessage(out))
	st, out = b.call(t, http.MethodDelete, path+"?force=maybe", adminToken, nil)
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"SF3"}`))
	require.Equal(t, http.StatusAccepted, st, "still there after the refusal: %v", out)

	st, out = b.call(t, http.MethodDelete, path+"?force=true", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, float64(6), out["undelivered"])
	require.Equal(t, true, out["deleted"])

	// Its key stops, it leaves the list, its name is free; its
	// deliveries are still there to be delivered.
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"SF4"}`))
	require.Equal(t, http.StatusUnauthorized, st, "%v", out)
	for _, sub := range []string{"", "/refusals", "/health"} {
		st, out = b.call(t, http.MethodGet, path+sub, adminToken, nil)
		require.Equal(t, http.StatusNotFound, st, "%s: %v", sub, out)
	}
	st, out = b.call(t, http.MethodPost, path+"/try", adminToken, map[string]any{"body": map[string]any{"tracking_no": "SF5"}})
	require.Equal(t, http.StatusNotFound, st, "%v", out)
	st, out = b.call(t, http.MethodDelete, path+"?force=true", adminToken, nil)
	require.Equal(t, http.StatusNotFound, st, "%v", out)
	_, list := b.call(t, http.MethodGet, "/v1/carriers", adminToken, nil)
	require.Empty(t, list["items"])
	b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "sf"})
	n, err := b.DB.CarrierPendingCount(t.Context(), id64(t, w.CarrierID), 100)
	require.NoError(t, err)
	require.Equal(t, int64(6), n)
}
