package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSecretsNeverLogged runs a full flow with debug logging: a carrier with
// a signing secret, merchants, endpoints (one healthy, one failing), a
// rotated secret, signed and badly signed callbacks, unknown keys,
// deliveries, failures and a test ping. No key, token or secret value (nor
// the base64 part of a whsec_ secret) appears in the logs or in any error
// body.
func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	s := startServe(t, map[string]string{"HOOKRELAY_LOG_LEVEL": "debug"})
	api := newSecAPI(t, s.URL)
	good := newSecSink(t, http.StatusNoContent)
	bad := newSecSink(t, http.StatusInternalServerError)

	const signingSecret = "carrier-signing-secret-5f1d9c2e7a"
	c := api.mustJSON(http.StatusCreated, "POST", "/v1/carriers", secAdminToken, map[string]any{
		"name": "secret-carrier", "ordering_key_field": "tracking_no", "signing_secret": signingSecret,
	})
	carrierKey := c["api_key"].(string)
	m := api.mustJSON(http.StatusCreated, "POST", "/v1/merchants", secAdminToken, map[string]any{"name": "secret-merchant"})
	merchantKey := m["api_key"].(string)
	e1 := api.mustJSON(http.StatusCreated, "POST", "/v1/endpoints", merchantKey, map[string]any{"url": good.URL + "/ok"})
	e2 := api.mustJSON(http.StatusCreated, "POST", "/v1/endpoints", merchantKey,
		map[string]any{"url": bad.URL + "/fail", "retry_schedule": []string{"1s"}})
	secrets := []string{e1["secret"].(string), e2["secret"].(string)}
	rot := api.mustJSON(http.StatusOK, "POST", "/v1/endpoints/"+secIDOf(t, e1)+"/rotate-secret", merchantKey, nil)
	if sec, ok := rot["secret"].(string); ok {
		secrets = append(secrets, sec)
	}

	sign := func(body []byte) string {
		mac := hmac.New(sha256.New, []byte(signingSecret))
		mac.Write(body)
		return "sha256=" + hex.EncodeToString(mac.Sum(nil))
	}
	for i := range 5 {
		body := []byte(`{"tracking_no":"SECRET-` + string(rune('A'+i)) + `","status":"in_transit"}`)
		st, data := api.do("POST", "/v1/callbacks", carrierKey, body, "X-Signature", sign(body))
		require.Equal(t, http.StatusAccepted, st, "%s", data)
	}
	// A bad signature, an unknown key, a wrong-kind key, a key in the wrong
	// header form: all refused, none echoed.
	body := []byte(`{"tracking_no":"SECRET-X","status":"x"}`)
	st, _ := api.do("POST", "/v1/callbacks", carrierKey, body, "X-Signature", "sha256="+strings.Repeat("0", 64))
	require.Equal(t, http.StatusUnauthorized, st)
	const unknownKey = "hrc_unknown_key_7c0ffee7c0ffee7c0ffee"
	st, _ = api.do("POST", "/v1/callbacks", unknownKey, body)
	require.Equal(t, http.StatusUnauthorized, st)
	st, _ = api.do("POST", "/v1/callbacks", merchantKey, body)
	require.Equal(t, http.StatusForbidden, st)
	st, _ = api.do("GET", "/v1/carriers", carrierKey, nil)
	require.Equal(t, http.StatusForbidden, st)
	st, _ = api.do("GET", "/v1/carriers", "", nil, "Authorization", "Basic "+secAdminToken)
	require.Equal(t, http.StatusUnauthorized, st)
	st, _ = api.do("POST", "/v1/endpoints/"+secIDOf(t, e2)+"/test", merchantKey, nil)
	require.Less(t, st, 500)

	// Deliveries happen (successes and failures with a retry).
	require.Eventually(t, func() bool { return good.hits.Load() >= 5 && bad.hits.Load() >= 6 },
		30*time.Second, 50*time.Millisecond, "deliveries did not happen: good %d bad %d", good.hits.Load(), bad.hits.Load())

	logs := s.Logs.String()
	require.Contains(t, logs, `"level":"DEBUG"`, "debug logging is not on: the test would prove nothing")
	values := map[string]string{
		"admin token": secAdminToken, "carrier key": carrierKey, "merchant key": merchantKey,
		"carrier signing secret": signingSecret, "unknown key": unknownKey,
	}
	for i, sec := range secrets {
		values["endpoint secret "+string(rune('0'+i))] = sec
		values["endpoint secret bytes "+string(rune('0'+i))] = strings.TrimPrefix(sec, "whsec_")
	}
	for name, v := range values {
		require.NotContains(t, logs, v, "%s appears in the logs", name)
		for _, b := range api.errorBodies {
			require.NotContains(t, b, v, "%s appears in an error body", name)
		}
	}
	// The merchant side receives signatures, never a secret.
	for _, r := range append(good.received(), bad.received()...) {
		for name, v := range values {
			require.NotContains(t, r, v, "%s sent to a merchant endpoint", name)
		}
	}
}
