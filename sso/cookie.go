package sso

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// cookieName is the cookie that carries a sign-in from Begin to Finish.
const cookieName = "hr_sso"

// flowTTL is how long a sign-in may take at the provider.
const flowTTL = 10 * time.Minute

// flow is what Finish needs of the sign-in Begin started. It travels in
// the browser, sealed (AES-256-GCM under a key only the dashboards that
// share the client secret have): the browser can neither read the PKCE
// verifier nor change a field, and any dashboard process can finish a
// sign-in another began.
type flow struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	ReturnTo string    `json:"r"`
	Expires  time.Time `json:"e"`
}

// newAEAD derives the cookie key from the client secret.
func newAEAD(clientSecret string) (cipher.AEAD, error) {
	mac := hmac.New(sha256.New, []byte(clientSecret))
	mac.Write([]byte("hookrelay sso flow cookie v1"))
	block, err := aes.NewCipher(mac.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts f for the cookie.
func seal(aead cipher.AEAD, f flow) (string, error) {
	plain, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(cookieName))), nil
}

// errBadFlow is a flow cookie that is missing, altered, sealed under
// another key or expired.
var errBadFlow = errors.New("sign-in cookie missing, altered or expired")

// open decrypts a cookie value sealed by seal and checks its expiry.
func open(aead cipher.AEAD, value string, now time.Time) (flow, error) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < aead.NonceSize() {
		return flow{}, errBadFlow
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(cookieName))
	if err != nil {
		return flow{}, errBadFlow
	}
	var f flow
	if err := json.Unmarshal(plain, &f); err != nil || !now.Before(f.Expires) {
		return flow{}, errBadFlow
	}
	return f, nil
}

// flowCookie is the cookie carrying value, scoped to the callback's path
// (the browser sends it to nothing else), HttpOnly, SameSite=Lax (sent on
// the provider's top-level redirect back, not on cross-site
// subrequests), Secure when the callback is https.
func (c *Client) flowCookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     cookieName,
		Value:    value,
		Path:     c.cookiePath,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   c.secure,
		SameSite: http.SameSiteLaxMode,
	}
}
