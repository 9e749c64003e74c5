package load

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// secretKey decodes a Standard Webhooks secret ("whsec_" + base64) into the
// HMAC key bytes.
func secretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New("secret lacks the whsec_ prefix")
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, errors.New("secret is not base64")
	}
	return key, nil
}

// Sign returns the v1 signature of body for id and timestamp with key, as a
// webhook-signature header entry ("v1,<base64>").
func Sign(key []byte, id, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// verifySignature reports whether one of the space-separated entries of
// header is the v1 signature of body by key.
func verifySignature(key []byte, id, timestamp, header string, body []byte) bool {
	want := Sign(key, id, timestamp, body)
	for _, entry := range strings.Fields(header) {
		if hmac.Equal([]byte(entry), []byte(want)) {
			return true
		}
	}
	return false
}
