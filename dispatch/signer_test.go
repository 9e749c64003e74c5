package dispatch

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
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

// verifyV1a checks a webhook-signature header's "v1a" entries with a
// "whpk_" public key, as a receiver does: decode the key, verify the
// ed25519 signature of "<webhook-id>.<webhook-timestamp>.<body>".
func verifyV1a(publicKey string, h http.Header, body []byte) bool {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(publicKey, "whpk_"))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return false
	}
	content := []byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body))
	for _, part := range strings.Fields(h.Get("webhook-signature")) {
		version, sig, ok := strings.Cut(part, ",")
		if !ok || version != "v1a" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && ed25519.Verify(raw, content, got) {
			return true
		}
	}
	return false
}

// TestSignEd25519: a "whsk_" key signs v1a, verified with its "whpk_"
// public key only; beside an HMAC secret (a rotation from hmac to ed25519)
// both entries are sent and each verifies with its own key.
func TestSignEd25519(t *testing.T) {
	t.Parallel()
	sk, hm := hookrelay.NewSigningKey(), stdSecret(3)
	pk := hookrelay.PublicKeyOf(sk)
	require.True(t, strings.HasPrefix(pk, "whpk_"))
	require.Empty(t, hookrelay.PublicKeyOf(hm), "an HMAC secret has no public key")
	body := []byte(`{"tracking_no":"TN-1"}`)
	h := http.Header{}
	h.Set("webhook-id", "msg_7")
	h.Set("webhook-timestamp", "1700000000")
	h.Set("webhook-signature", Sign([]string{sk, hm}, "msg_7", 1700000000, body))
	parts := strings.Fields(h.Get("webhook-signature"))
	require.Len(t, parts, 2)
	require.True(t, strings.HasPrefix(parts[0], "v1a,"))
	require.True(t, strings.HasPrefix(parts[1], "v1,"))
	require.True(t, verifyV1a(pk, h, body))
	require.True(t, verifyStandardWebhook(hm, h, body))
	require.False(t, verifyV1a(pk, h, append(body, ' ')), "another body does not verify")
	require.False(t, verifyV1a(hookrelay.PublicKeyOf(hookrelay.NewSigningKey()), h, body), "another key does not verify")

	// A 32-byte seed is the same key as its 64-byte form.
	key, ok := hookrelay.SigningKeyOf(sk)
	require.True(t, ok)
	seed := "whsk_" + base64.StdEncoding.EncodeToString(key.Seed())
	require.Equal(t, pk, hookrelay.PublicKeyOf(seed))
	require.Equal(t, Sign([]string{sk}, "m", 1, body), Sign([]string{seed}, "m", 1, body))
}
