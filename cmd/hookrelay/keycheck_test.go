package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/logtest"
	"github.com/hookrelay/hookrelay/keyring"
)

// keyIDOf returns the key id of an encryption key.
func keyIDOf(t *testing.T, key string) string {
	t.Helper()
	k, err := keyring.Parse(key, "")
	require.NoError(t, err)
	return k.CurrentID()
}

// rawConn connects to url for reading and writing rows behind the service.
func rawConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// serveRefused runs `hookrelay serve` as startServe does (env entries
// override) and returns the logs and run's error, expecting it to end by
// itself: it fails the test if the process reports that it serves.
func serveRefused(t *testing.T, env map[string]string) (string, error) {
	t.Helper()
	base := map[string]string{
		"HOOKRELAY_ADDR":                  "127.0.0.1:0",
		"HOOKRELAY_S3_EMBED_ADDR":         "127.0.0.1:0",
		"HOOKRELAY_DATA_DIR":              t.TempDir(),
		"HOOKRELAY_ADMIN_TOKEN":           restAdmin,
		"HOOKRELAY_ENCRYPTION_KEY":        dbtest.TestEncryptionKey,
		"HOOKRELAY_LOG_FORMAT":            "json",
		"HOOKRELAY_ALLOW_PRIVATE_TARGETS": "true",
	}
	for k, v := range env {
		base[k] = v
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logs := &logtest.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"hookrelay", "serve"}, func(k string) string { return base[k] }, &logtest.Buffer{}, logs)
	}()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-done:
			return logs.String(), err
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("serve did not end by itself within 60 s; logs:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
			if servingAddr(logs.String()) != "" {
				cancel()
				<-done
				t.Fatalf("serve started and reported ready; logs:\n%s", logs.String())
			}
		}
	}
}

// settingValue reads a settings row ("" when absent).
func settingValue(t *testing.T, conn *pgx.Conn, name string) string {
	t.Helper()
	var v string
	err := conn.QueryRow(t.Context(), `SELECT value FROM settings WHERE name = $1`, name).Scan(&v)
	if err == pgx.ErrNoRows {
		return ""
	}
	require.NoError(t, err)
	return v
}

// sealedUnder counts the stored secrets sealed under key id (key check
// values aside).
func sealedUnder(t *testing.T, conn *pgx.Conn, id string) int {
	t.Helper()
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM (
		SELECT secret AS v FROM endpoint_secrets UNION ALL SELECT auth FROM endpoints
		UNION ALL SELECT h.value FROM endpoints, jsonb_each_text(headers) h
		UNION ALL SELECT signing_secret FROM carriers UNION ALL SELECT secret FROM ops_endpoints
		UNION ALL SELECT value FROM settings WHERE NOT starts_with(name, 'encryption_key_check.')) x WHERE starts_with(v, $1)`, keyring.Prefix+id+":").Scan(&n))
	return n
}

// TestServeRefusesAnotherEncryptionKey: restarted with another key of valid
// form, serve (and migrate) refuse before sealing anything — an error that
// names the key id the data needs, never ready — and on the right key
// again everything works with the same secrets. A key given under the
// right id that is not the right key (its check value does not verify) is
// refused too.
func TestServeRefusesAnotherEncryptionKey(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	keyA, keyB := dbtest.TestEncryptionKey, keyring.Generate()
	idA, idB := keyIDOf(t, keyA), keyIDOf(t, keyB)
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	sink := newChangeSink(t)
	carrierKey, _, _, secret := receiverEndpoint(t, s, sink.URL+"/hook")
	require.NoError(t, s.Stop(t))
	conn := rawConn(t, url)
	require.True(t, strings.HasPrefix(settingValue(t, conn, "encryption_key_check."+idA), keyring.Prefix+idA+":"),
		"the first start stored the key's check value")

	logs, err := serveRefused(t, map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": keyB})
	require.Error(t, err, logs)
	require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
	for _, want := range []string{"key id " + idA, "a key this process does not have", "This process has key id " + idB,
		"HOOKRELAY_ENCRYPTION_KEY", "HOOKRELAY_ENCRYPTION_LOST_KEY_IDS"} {
		require.Contains(t, err.Error(), want)
	}
	require.NotContains(t, err.Error(), keyB)
	require.Zero(t, sealedUnder(t, conn, idB), "nothing sealed under the refused key")
	require.Empty(t, settingValue(t, conn, "encryption_key_check."+idB))

	env := map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": keyB, "HOOKRELAY_LOG_FORMAT": "json"}
	var out, errOut bytes.Buffer
	err = run(t.Context(), []string{"hookrelay", "migrate"}, func(k string) string { return env[k] }, &out, &errOut)
	require.ErrorContains(t, err, "key id "+idA)

	s = startServe(t, map[string]string{"DATABASE_URL": url})
	r := sendAndWait(t, s, sink, carrierKey, "TN-back-on-A")
	require.True(t, signedWith(r, secret), "the same secret signs on the right key")
	require.NoError(t, s.Stop(t))

	// Another key under idA: its check value, forged by a third key and
	// relabelled, does not verify.
	third, err := keyring.Parse(keyring.Generate(), "")
	require.NoError(t, err)
	check, _ := third.CheckValue(third.CurrentID())
	forged := strings.Replace(check, third.CurrentID(), idA, 1)
	_, err = conn.Exec(t.Context(), `UPDATE settings SET value = $1 WHERE name = $2`, forged, "encryption_key_check."+idA)
	require.NoError(t, err)
	_, err = serveRefused(t, map[string]string{"DATABASE_URL": url})
	require.ErrorContains(t, err, "the key given with id "+idA+" is not the key")
}

// TestRotationStoresTheNewKeysCheckValue: a process holding the new key
// and the old one (HOOKRELAY_ENCRYPTION_KEYS_OLD) starts and stores the new
// key's check value; after rotate-encryption-key the new key alone starts,
// and the old key alone is refused, naming the new key's id.
func TestRotationStoresTheNewKeysCheckValue(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	keyA, keyB := dbtest.TestEncryptionKey, keyring.Generate()
	idA, idB := keyIDOf(t, keyA), keyIDOf(t, keyB)
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	sink := newChangeSink(t)
	carrierKey, _, _, secret := receiverEndpoint(t, s, sink.URL+"/hook")
	require.NoError(t, s.Stop(t))

	s = startServe(t, map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": keyB, "HOOKRELAY_ENCRYPTION_KEYS_OLD": keyA})
	require.NoError(t, s.Stop(t))
	conn := rawConn(t, url)
	ringB, err := keyring.Parse(keyB, "")
	require.NoError(t, err)
	require.NoError(t, ringB.VerifyCheck(settingValue(t, conn, "encryption_key_check."+idB)), "the new key's check value is stored")

	env := map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": keyB, "HOOKRELAY_ENCRYPTION_KEYS_OLD": keyA, "HOOKRELAY_LOG_FORMAT": "json"}
	var out, errOut bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"hookrelay", "rotate-encryption-key"}, func(k string) string { return env[k] }, &out, &errOut), errOut.String())
	require.Zero(t, sealedUnder(t, conn, idA), "every value re-sealed under the new key")
	var recorded int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'encryption_key.rotate' AND actor_name = 'cli' AND result = 'ok'`).Scan(&recorded))
	require.Equal(t, 1, recorded, "the rotation is in the audit log")

	s = startServe(t, map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": keyB})
	r := sendAndWait(t, s, sink, carrierKey, "TN-after-rotation")
	require.True(t, signedWith(r, secret))
	require.NoError(t, s.Stop(t))

	_, err = serveRefused(t, map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": keyA})
	require.ErrorContains(t, err, "key id "+idB)
}

// TestLostKeyIDsStartWithoutTheKey: with the lost key's id declared, the
// service starts on another key; the endpoint whose values that key sealed
// reads without them (200, "unreadable"), is fixed through the API (a new
// secret, headers and credentials given again) and then delivers.
func TestLostKeyIDsStartWithoutTheKey(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	keyA, keyB := dbtest.TestEncryptionKey, keyring.Generate()
	idA := keyIDOf(t, keyA)
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	sink := newChangeSink(t)
	carrierKey, merchantKey, id, _ := receiverEndpoint(t, s, sink.URL+"/hook")
	require.NoError(t, s.Stop(t))

	s = startServe(t, map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": keyB, "HOOKRELAY_ENCRYPTION_LOST_KEY_IDS": idA})
	require.Contains(t, s.Logs.String(), "values sealed under a key declared lost stay unreadable")
	var ep struct {
		Headers    map[string]string `json:"headers"`
		Auth       any               `json:"auth"`
		Unreadable struct {
			Fields  []string `json:"fields"`
			Headers []string `json:"headers"`
			Reason  string   `json:"reason"`
		} `json:"unreadable"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, "GET", s.URL+"/v1/endpoints/"+id, merchantKey, nil, &ep))
	require.Equal(t, []string{"secret", "headers", "auth"}, ep.Unreadable.Fields)
	require.Equal(t, []string{"X-Api-Key", "X-Tenant"}, ep.Unreadable.Headers)
	require.Contains(t, ep.Unreadable.Reason, "key id "+idA)
	require.Contains(t, ep.Headers, "X-Api-Key", "the names stay readable")

	// Headers given in part: the one left out cannot be kept.
	var bad map[string]any
	require.Equal(t, http.StatusBadRequest, apiCall(t, "PATCH", s.URL+"/v1/endpoints/"+id, merchantKey,
		map[string]any{"headers": map[string]any{"X-Api-Key": "new-api-key"}}, &bad))
	require.Contains(t, bad["error"].(map[string]any)["message"], `"X-Tenant" cannot be decrypted`)
	// Another field alone: saved, the unreadable values kept as they are.
	require.Equal(t, http.StatusOK, apiCall(t, "PATCH", s.URL+"/v1/endpoints/"+id, merchantKey, map[string]any{"description": "fixing"}, nil))
	var rot struct {
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, "POST", s.URL+"/v1/endpoints/"+id+"/rotate-secret", merchantKey, nil, &rot))
	var fixed map[string]any
	require.Equal(t, http.StatusOK, apiCall(t, "PATCH", s.URL+"/v1/endpoints/"+id, merchantKey, map[string]any{
		"headers": map[string]any{"X-Api-Key": "new-api-key", "X-Tenant": nil},
		"auth":    map[string]any{"type": "bearer", "token": "new-token"},
	}, &fixed))
	require.NotContains(t, fixed, "unreadable", "fixed")
	r := sendAndWait(t, s, sink, carrierKey, "TN-fixed")
	require.True(t, signedWith(r, rot.Secret))
	require.Equal(t, "new-api-key", r.header.Get("X-Api-Key"))
	require.Equal(t, "Bearer new-token", r.header.Get("Authorization"))
}
