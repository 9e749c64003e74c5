package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// FuzzVerifySignature: the carrier signature check never panics, accepts
// exactly the HMAC-SHA256 of the body under the secret, and refuses it once
// the body changes.
func FuzzVerifySignature(f *testing.F) {
	f.Add("sha256=00", "secret-0123456789", []byte(`{"tracking_no":"SF1"}`))
	f.Add("", "s", []byte(nil))
	f.Add("sha256=zz", "ключ", []byte("{}"))
	f.Add(" sha256=ABCDEF ", "k", []byte("x"))
	f.Fuzz(func(t *testing.T, header, secret string, body []byte) {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		want := mac.Sum(nil)
		if err := verifySignature(header, secret, body); err == nil {
			h, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
			got, derr := hex.DecodeString(h)
			if !ok || derr != nil || !hmac.Equal(got, want) {
				t.Fatalf("accepted a wrong signature %q", header)
			}
		}
		good := "sha256=" + hex.EncodeToString(want)
		if err := verifySignature(good, secret, body); err != nil {
			t.Fatalf("refused the right signature: %v", err)
		}
		tampered := append(append([]byte(nil), body...), '!')
		if err := verifySignature(good, secret, tampered); err == nil {
			t.Fatal("accepted the signature of another body")
		}
	})
}
