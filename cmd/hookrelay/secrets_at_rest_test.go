package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/keyring"
)

const restAdmin = "hra_test_admin_token_0123456789"

// receiverEndpoint registers a carrier, a merchant and an endpoint at url
// with custom headers and basic credentials; it returns the carrier key,
// the merchant key, the endpoint id and its signing secret.
func receiverEndpoint(t *testing.T, s *testServer, url string) (carrierKey, merchantKey, id, secret string) {
	t.Helper()
	var carrier, merchant struct {
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/carriers", restAdmin,
		map[string]any{"name": "acme", "ordering_key_field": "tracking_no", "event_type_field": "status"}, &carrier))
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/merchants", restAdmin, map[string]any{"name": "shop"}, &merchant))
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/endpoints", merchant.APIKey, map[string]any{
		"url":     url,
		"headers": map[string]any{"X-Api-Key": "hdr-value-7d1f0c2b9e", "X-Tenant": "tenant-value-44aa"},
		"auth":    map[string]any{"type": "basic", "username": "user-name-5c3e", "password": "pass-word-9b8a7c"},
	}, &ep))
	return carrier.APIKey, merchant.APIKey, ep.ID, ep.Secret
}

// sendAndWait posts a callback with ordering key key and waits for sink to
// receive it.
func sendAndWait(t *testing.T, s *testServer, sink *changeSink, carrierKey, key string) changeReq {
	t.Helper()
	st, _, out := ingestCall(t, s, "POST", "/v1/callbacks", carrierKey, map[string]any{"tracking_no": key, "status": "delivered"})
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Eventually(t, func() bool { return len(sink.byKey(key)) > 0 }, 30*time.Second, 20*time.Millisecond, "no delivery of %s", key)
	return sink.byKey(key)[0]
}

// TestReceiverGetsHeadersAndAuth: a real loopback receiver sees the
// endpoint's custom headers and its Authorization header on deliveries and
// test pings, beside a valid signature; a PATCH to bearer credentials holds
// for the next delivery.
func TestReceiverGetsHeadersAndAuth(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil)
	sink := newChangeSink(t)
	carrierKey, merchantKey, id, secret := receiverEndpoint(t, s, sink.URL+"/hook")

	r := sendAndWait(t, s, sink, carrierKey, "TN-1")
	require.Equal(t, "hdr-value-7d1f0c2b9e", r.header.Get("X-Api-Key"))
	require.Equal(t, "tenant-value-44aa", r.header.Get("X-Tenant"))
	require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("user-name-5c3e:pass-word-9b8a7c")), r.header.Get("Authorization"))
	require.True(t, signedWith(r, secret), "signed with the endpoint's secret")
	require.Equal(t, "application/json", r.header.Get("Content-Type"))

	require.Equal(t, http.StatusOK, apiCall(t, "PATCH", s.URL+"/v1/endpoints/"+id, merchantKey, map[string]any{
		"auth": map[string]any{"type": "bearer", "token": "bearer-token-31f9"}, "headers": map[string]any{"X-Tenant": nil},
	}, nil))
	r = sendAndWait(t, s, sink, carrierKey, "TN-2")
	require.Equal(t, "Bearer bearer-token-31f9", r.header.Get("Authorization"))
	require.Equal(t, "hdr-value-7d1f0c2b9e", r.header.Get("X-Api-Key"))
	require.Empty(t, r.header.Get("X-Tenant"))

	var ping map[string]any
	require.Equal(t, http.StatusOK, apiCall(t, "POST", s.URL+"/v1/endpoints/"+id+"/test", merchantKey, nil, &ping))
	require.Equal(t, true, ping["success"], "%v", ping)
	require.Eventually(t, func() bool {
		for _, r := range sink.byKey("") {
			if r.header.Get("X-Hookrelay-Event-Type") == "ping" {
				return r.header.Get("Authorization") == "Bearer bearer-token-31f9" && r.header.Get("X-Api-Key") == "hdr-value-7d1f0c2b9e"
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the test ping carries the headers and credentials")
}

// clearTextHits returns "table.column" for every column of every table of
// the database (text, json, arrays, bytea: all cast to text) that holds one
// of needles.
func clearTextHits(t *testing.T, url string, needles []string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT c.table_name, c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'`)
	require.NoError(t, err)
	type col struct{ table, column string }
	var cols []col
	for rows.Next() {
		var c col
		require.NoError(t, rows.Scan(&c.table, &c.column))
		cols = append(cols, c)
	}
	require.NoError(t, rows.Err())
	require.Greater(t, len(cols), 50, "every table's columns are read")
	var hits []string
	for _, c := range cols {
		for _, n := range needles {
			var found bool
			q := `SELECT EXISTS (SELECT 1 FROM ` + pgx.Identifier{c.table}.Sanitize() + ` WHERE position($1 in ` +
				pgx.Identifier{c.column}.Sanitize() + `::text) > 0)`
			require.NoError(t, conn.QueryRow(ctx, q, n).Scan(&found), "%s.%s", c.table, c.column)
			if found {
				hits = append(hits, c.table+"."+c.column+" holds "+n)
			}
		}
	}
	return hits
}

// secretNeedles are the clear-text forms of a signing secret: the whole
// whsec_ string and its base64 part.
func secretNeedles(secrets ...string) []string {
	var out []string
	for _, s := range secrets {
		out = append(out, s, strings.TrimPrefix(s, "whsec_"))
	}
	return out
}

// TestNoSecretInClearTextInDatabase reads every column of every table and
// finds no signing secret (current or rotated out), custom header value or
// credential in clear text.
func TestNoSecretInClearTextInDatabase(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	sink := newChangeSink(t)
	carrierKey, merchantKey, id, secret := receiverEndpoint(t, s, sink.URL+"/hook")
	var rot struct {
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, "POST", s.URL+"/v1/endpoints/"+id+"/rotate-secret", merchantKey, nil, &rot))
	r := sendAndWait(t, s, sink, carrierKey, "TN-1")
	require.True(t, signedWith(r, secret) && signedWith(r, rot.Secret), "both secrets sign during the overlap")
	require.Equal(t, http.StatusOK, apiCall(t, "PATCH", s.URL+"/v1/endpoints/"+id, merchantKey, map[string]any{
		"headers": map[string]any{"X-Extra": "patched-header-6e2d"},
	}, nil))

	// A carrier that signs its callbacks, and an operator's webhook receiver.
	const carrierSecret = "carrier-signing-secret-2b7e91d4"
	var signed struct {
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/carriers", restAdmin,
		map[string]any{"name": "signed", "signing_secret": carrierSecret}, &signed))
	body := []byte(`{"tracking_no":"TN-2","status":"x"}`)
	mac := hmac.New(sha256.New, []byte(carrierSecret))
	mac.Write(body)
	st, _, out := ingestCall(t, s, "POST", "/v1/callbacks", signed.APIKey, body, "X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	require.Equal(t, http.StatusAccepted, st, "the sealed carrier secret still verifies: %v", out)
	var ops struct {
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/ops-endpoints", restAdmin,
		map[string]any{"url": sink.URL + "/ops"}, &ops))
	require.NotEmpty(t, ops.Secret)

	needles := append(secretNeedles(secret, rot.Secret, ops.Secret), carrierSecret,
		"hdr-value-7d1f0c2b9e", "tenant-value-44aa", "user-name-5c3e", "pass-word-9b8a7c", "patched-header-6e2d")
	require.Empty(t, clearTextHits(t, url, needles))
	// The check can fail: the header names are stored in clear and found.
	require.NotEmpty(t, clearTextHits(t, url, []string{"X-Api-Key"}))
}

// TestRotateEncryptionKey: rows written in clear before sealing existed are
// sealed at start-up; `hookrelay rotate-encryption-key` re-seals every row
// under the new key (the old one only opening); a service holding only the
// new key then still signs with the same secrets and sends the same headers.
func TestRotateEncryptionKey(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	oldKey, newKey := dbtest.TestEncryptionKey, keyring.Generate()
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	sink := newChangeSink(t)
	carrierKey, _, _, secret := receiverEndpoint(t, s, sink.URL+"/hook")
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/carriers", restAdmin,
		map[string]any{"name": "signed", "signing_secret": "carrier-signing-secret-2b7e91d4"}, nil))
	require.NoError(t, s.Stop(t))

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	// A secret row as versions before sealing stored it.
	plainSecret := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	_, err = conn.Exec(ctx, `INSERT INTO endpoint_secrets (endpoint_id, secret) SELECT endpoint_id, $1 FROM endpoint_secrets LIMIT 1`, plainSecret)
	require.NoError(t, err)

	env := func(cur, old string) func(string) string {
		m := map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": cur, "HOOKRELAY_ENCRYPTION_KEYS_OLD": old, "HOOKRELAY_LOG_FORMAT": "json"}
		return func(k string) string { return m[k] }
	}
	var out, errOut bytes.Buffer
	// Without the old key the rows sealed under it cannot be opened: refused
	// by the key check at start, before anything is sealed (the clear-text
	// row included: sealed under a key that is not the data's, it would be
	// lost to the processes that have the right one).
	err = run(ctx, []string{"hookrelay", "rotate-encryption-key"}, env(newKey, ""), &out, &errOut)
	require.ErrorContains(t, err, "does not have")
	require.NotContains(t, errOut.String(), "sealed secrets stored in plaintext")
	require.NoError(t, run(ctx, []string{"hookrelay", "rotate-encryption-key", "--batch", "1"}, env(newKey, oldKey), &out, &errOut), errOut.String())
	require.Contains(t, errOut.String(), "sealed secrets stored in plaintext")
	require.Contains(t, out.String(), "re-encrypted under the current key: 1 endpoint signing secrets, 1 endpoints' headers and credentials, 1 carrier signing secrets, 0 ops endpoint secrets")

	newRing, err := keyring.Parse(newKey, "")
	require.NoError(t, err)
	rows, err := conn.Query(ctx, `SELECT secret FROM endpoint_secrets UNION ALL SELECT auth FROM endpoints WHERE auth <> ''
		UNION ALL SELECT h.value FROM endpoints, jsonb_each_text(headers) h
		UNION ALL SELECT signing_secret FROM carriers WHERE signing_secret IS NOT NULL`)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var v string
		require.NoError(t, rows.Scan(&v))
		require.True(t, strings.HasPrefix(v, newRing.CurrentPrefix()), "sealed under the new key: %.20s", v)
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 6, n, "two secrets, one auth, two header values, a carrier's secret")
	require.Empty(t, clearTextHits(t, url, secretNeedles(secret, plainSecret)))

	s2 := startServe(t, map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": newKey})
	r := sendAndWait(t, s2, sink, carrierKey, "TN-after")
	require.True(t, signedWith(r, secret), "the original secret still signs")
	require.True(t, signedWith(r, plainSecret), "the formerly clear-text secret still signs")
	require.Equal(t, "hdr-value-7d1f0c2b9e", r.header.Get("X-Api-Key"))
	require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("user-name-5c3e:pass-word-9b8a7c")), r.header.Get("Authorization"))
}

// TestServeRequiresEncryptionKey: without HOOKRELAY_ENCRYPTION_KEY serve
// refuses to start before opening the database; a malformed key is refused
// without being echoed.
func TestServeRequiresEncryptionKey(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?sslmode=disable", "HOOKRELAY_ADDR": "127.0.0.1:0"}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"hookrelay", "serve"}, func(k string) string { return env[k] }, &out, &errOut)
	require.ErrorContains(t, err, "HOOKRELAY_ENCRYPTION_KEY is required")
	env["HOOKRELAY_ENCRYPTION_KEY"] = "c2VjcmV0LWJ1dC1zaG9ydA=="
	err = run(t.Context(), []string{"hookrelay", "serve"}, func(k string) string { return env[k] }, &out, &errOut)
	require.ErrorContains(t, err, "HOOKRELAY_ENCRYPTION_KEY")
	require.NotContains(t, err.Error(), env["HOOKRELAY_ENCRYPTION_KEY"])
	env["HOOKRELAY_ENCRYPTION_KEY"] = keyring.Generate()
	env["HOOKRELAY_ENCRYPTION_KEYS_OLD"] = "nope"
	err = run(t.Context(), []string{"hookrelay", "serve"}, func(k string) string { return env[k] }, &out, &errOut)
	require.ErrorContains(t, err, "HOOKRELAY_ENCRYPTION_KEYS_OLD")
}
