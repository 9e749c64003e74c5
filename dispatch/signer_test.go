package dispatch

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// verifyStandardWebhook is an independent Standard Webhooks verifier written
// from the specification (not from our signer): the signed content is
// "<webhook-id>.<webhook-timestamp>.<body>", the key is the base64 decoding of
// the secret after "whsec_", and webhook-signature holds space-separated
// "v1,<base64 signature>" entries, any of which may match.
func verifyStandardWebhook(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	content := h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(content))
	want := m.Sum(nil)
	for _, part := range strings.Fields(h.Get("webhook-signature")) {
		version, sig, ok := strings.Cut(part, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// stdSecret returns a Standard Webhooks secret (standard base64).
func stdSecret(b byte) string {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = b + byte(i)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(raw)
}

func TestSignVerifiesWithIndependentVerifier(t *testing.T) {
	t.Parallel()
	// Test vector from the Standard Webhooks specification's reference
	// libraries' documented example.
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	sig := Sign([]string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)

	oldS, newS := stdSecret(1), stdSecret(100)
	h := http.Header{}
	h.Set("webhook-id", "msg_42")
	h.Set("webhook-timestamp", "1700000000")
	h.Set("webhook-signature", Sign([]string{newS, oldS}, "msg_42", 1700000000, body))
	require.Len(t, strings.Fields(h.Get("webhook-signature")), 2)
	require.True(t, verifyStandardWebhook(newS, h, body))
	require.True(t, verifyStandardWebhook(oldS, h, body), "rotated secret still verifies")
	require.False(t, verifyStandardWebhook(stdSecret(7), h, body))
	require.False(t, verifyStandardWebhook(newS, h, append(body, ' ')))
}
