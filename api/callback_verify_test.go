package api_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

func TestCallbackSignatureSchemes(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	const secret = "carrier-secret-0123456789"
	carrier := func(name string, sig map[string]any) string {
		c := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": name, "signature": sig})
		require.Equal(t, true, c["signed"])
		return c["api_key"].(string)
	}
	const body = `{"tracking_no":"YT1","status":"signed_for"}`
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)

	sha1B64 := func(msg string) string {
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write([]byte(msg))
		return base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	md5B64 := func(msg string) string {
		sum := md5.Sum([]byte(msg))
		return base64.StdEncoding.EncodeToString(sum[:])
	}
	swKey := []byte("0123456789abcdef0123456789abcdef")
	swSecret := "whsec_" + base64.StdEncoding.EncodeToString(swKey)
	sw := func(id, ts string) string {
		mac := hmac.New(sha256.New, swKey)
		mac.Write([]byte(id + "." + ts + "." + body))
		return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}

	hmacKey := carrier("hmac-sha1", map[string]any{"scheme": "hmac", "algorithm": "sha1", "encoding": "base64", "header": "X-Sign", "prefix": "v1=", "secret": secret})
	tsKey := carrier("hmac-ts", map[string]any{"scheme": "hmac", "message": "timestamp+body", "timestamp_header": "X-Timestamp", "tolerance": "5m", "secret": secret})
	queryKey := carrier("query", map[string]any{"scheme": "hmac", "query": "sign", "secret": secret})
	digestKey := carrier("digest", map[string]any{"scheme": "digest", "algorithm": "md5", "encoding": "base64", "header": "X-Data-Digest", "secret": secret})
	swCarrier := carrier("sw", map[string]any{"scheme": "standard-webhooks", "secret": swSecret})

	for _, tc := range []struct {
		name   string
		key    string
		path   string
		hdr    []string
		status int
		msg    string // the refusal's message
	}{
		{"hmac sha1 base64 with a prefix", hmacKey, "", []string{"X-Sign", "v1=" + sha1B64(body)}, 202, ""},
		{"hmac without its prefix", hmacKey, "", []string{"X-Sign", sha1B64(body)}, 401,
			`invalid signature in the X-Sign header: it must start with "v1=" (want v1=<base64 HMAC-SHA1 of the body>)`},
		{"hmac missing", hmacKey, "", nil, 401, "missing signature: send the X-Sign header with v1=<base64 HMAC-SHA1 of the body>"},
		{"hmac of another body", hmacKey, "", []string{"X-Sign", "v1=" + sha1B64(body+" ")}, 401,
			"invalid signature in the X-Sign header (want v1=<base64 HMAC-SHA1 of the body>)"},
		{"timestamp+body", tsKey, "", []string{"X-Signature", hmacHex(secret, now+"."+body), "X-Timestamp", now}, 202, ""},
		{"timestamp+body, stale", tsKey, "", []string{"X-Signature", hmacHex(secret, stale+"."+body), "X-Timestamp", stale}, 401,
			"X-Timestamp header " + stale + " is outside the tolerance of 5m0s from now"},
		{"timestamp+body, no timestamp", tsKey, "", []string{"X-Signature", hmacHex(secret, now+"."+body)}, 401,
			"missing or malformed X-Timestamp header: send the time of signing in Unix seconds"},
		{"timestamp+body, timestamp changed", tsKey, "", []string{"X-Signature", hmacHex(secret, stale+"."+body), "X-Timestamp", now}, 401,
			"invalid signature in the X-Signature header"},
		{"query parameter", queryKey, "?sign=" + hmacHex(secret, body), nil, 202, ""},
		{"query parameter wrong", queryKey, "?sign=" + hmacHex(secret, "{}"), nil, 401, "invalid signature in the query parameter sign"},
		{"query parameter in a header", queryKey, "", []string{"X-Signature", hmacHex(secret, body)}, 401, "missing signature: send the query parameter sign"},
		{"digest md5 of body+secret", digestKey, "", []string{"X-Data-Digest", md5B64(body + secret)}, 202, ""},
		{"digest of the body alone", digestKey, "", []string{"X-Data-Digest", md5B64(body)}, 401, "invalid signature in the X-Data-Digest header"},
		{"standard webhooks", swCarrier, "", []string{"webhook-id", "msg_1", "webhook-timestamp", now, "webhook-signature", "v1,AAAA " + sw("msg_1", now)}, 202, ""},
		{"standard webhooks, another id", swCarrier, "", []string{"webhook-id", "msg_2", "webhook-timestamp", now, "webhook-signature", sw("msg_1", now)}, 401,
			"invalid signature in the webhook-signature header: no v1 signature matches"},
		{"standard webhooks, stale", swCarrier, "", []string{"webhook-id", "msg_1", "webhook-timestamp", stale, "webhook-signature", sw("msg_1", stale)}, 401,
			"webhook-timestamp header " + stale + " is outside the tolerance of 5m0s"},
		{"standard webhooks, unsigned", swCarrier, "", []string{"webhook-id", "msg_1", "webhook-timestamp", now}, 401,
			"missing signature: send webhook-id, webhook-timestamp and webhook-signature"},
	} {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks"+tc.path, tc.key, []byte(body), tc.hdr...)
		require.Equal(t, tc.status, st, "%s: %v", tc.name, out)
		if tc.status == 401 {
			require.Equal(t, "invalid_signature", errCode(out), tc.name)
			require.Contains(t, errMessage(out), tc.msg, tc.name)
		}
	}
	require.NotContains(t, b.Logs.String(), secret)

	// The declaration is shown, never the secret.
	_, list := b.call(t, http.MethodGet, "/v1/carriers", adminToken, nil)
	for _, it := range list["items"].([]any) {
		c := it.(map[string]any)
		require.NotContains(t, c["signature"], "secret")
	}
	conn, err := pgx.Connect(t.Context(), b.DBURL)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), "SELECT coalesce(signature::text, '') || coalesce(signing_secret, '') FROM carriers")
	require.NoError(t, err)
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, stored, 5)
	for _, s := range stored {
		require.NotContains(t, s, secret, "stored sealed")
		require.NotContains(t, s, swSecret, "stored sealed")
	}
}

func TestCallbackAllowedAddresses(t *testing.T) {
	t.Parallel()
	body := []byte(`{"tracking_no":"JD1"}`)

	// Clients connect directly: the TCP peer (127.0.0.1) is the address,
	// whatever X-Forwarded-For says.
	b := setup(t, privateOK())
	far := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "far", "allowed_cidrs": []string{"203.0.113.0/24", "2001:db8::/32"}})
	near := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "near", "allowed_cidrs": []string{"198.51.100.7", "127.0.0.0/8"}})
	require.Equal(t, []any{"203.0.113.0/24", "2001:db8::/32"}, far["allowed_cidrs"])
	require.Equal(t, []any{"198.51.100.7/32", "127.0.0.0/8"}, near["allowed_cidrs"])
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", far["api_key"].(string), body, "X-Forwarded-For", "203.0.113.9")
	require.Equal(t, http.StatusForbidden, st, "%v", out)
	require.Equal(t, "forbidden", errCode(out))
	require.Equal(t, "source address 127.0.0.1 is not in this carrier's allowed addresses (allowed_cidrs)", errMessage(out))
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", near["api_key"].(string), body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	// The list cleared: any address.
	st, out = b.call(t, http.MethodPatch, "/v1/carriers/"+far["id"].(string), adminToken, map[string]any{"allowed_cidrs": []string{}})
	require.Equal(t, http.StatusOK, st, "%v", out)
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", far["api_key"].(string), body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)

	// Behind a trusted proxy (the loopback peer): the rightmost
	// X-Forwarded-For address that is not a trusted proxy.
	p := setup(t, config{Ops: privateTargets, Config: api.Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}}})
	pc := p.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "proxied", "allowed_cidrs": []string{"203.0.113.0/24", "2001:db8::/32"}})
	key := pc["api_key"].(string)
	for _, tc := range []struct {
		xff    []string
		status int
		addr   string
	}{
		{[]string{"203.0.113.9"}, 202, ""},
		{[]string{"203.0.113.9, 10.1.2.3"}, 202, ""},     // through a second trusted proxy
		{[]string{"203.0.113.9", "10.1.2.3"}, 202, ""},   // in two header lines
		{[]string{"198.51.100.1, 203.0.113.9"}, 202, ""}, // what the client wrote on the left is ignored
		{[]string{"203.0.113.9, 198.51.100.1"}, 403, "198.51.100.1"},
		{[]string{"2001:db8::5"}, 202, ""},
		{[]string{"2001:db9::5"}, 403, "2001:db9::5"},
		{nil, 403, "127.0.0.1"}, // the proxy itself
		{[]string{"not-an-address, 203.0.113.9"}, 202, ""},
		{[]string{"203.0.113.9, not-an-address"}, 403, "127.0.0.1"},
	} {
		hdr := []string{}
		for _, v := range tc.xff {
			hdr = append(hdr, "X-Forwarded-For", v)
		}
		st, out := p.callMulti(t, "/v1/callbacks", key, body, hdr)
		require.Equal(t, tc.status, st, "%v: %v", tc.xff, out)
		if tc.status == 403 {
			require.Equal(t, "source address "+tc.addr+" is not in this carrier's allowed addresses (allowed_cidrs)", errMessage(out), "%v", tc.xff)
		}
	}
}

// callMulti posts body with headers that may repeat (name, value, ...).
func (b *bundle) callMulti(t testing.TB, path, token string, body []byte, hdr []string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := apitest.Client(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	if resp.StatusCode != http.StatusAccepted {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	}
	return resp.StatusCode, out
}
