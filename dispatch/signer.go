package dispatch

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/hookrelay/hookrelay"
)

// secretKey returns the HMAC key bytes of a "whsec_<base64>" secret. Standard
// Webhooks uses standard base64; the URL-safe and unpadded forms are accepted
// too. A secret that is not base64 signs with its raw bytes.
func secretKey(secret string) []byte {
	s := strings.TrimPrefix(secret, hookrelay.SecretPrefix)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
	}
	return []byte(s)
}

// Sign returns the webhook-signature header value for a message: one
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" per secret, separated by
// spaces.
func Sign(secrets []string, msgID string, timestamp int64, body []byte) string {
	var b strings.Builder
	ts := strconv.FormatInt(timestamp, 10)
	for i, secret := range secrets {
		mac := hmac.New(sha256.New, secretKey(secret))
		mac.Write([]byte(msgID))
		mac.Write([]byte{'.'})
		mac.Write([]byte(ts))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
