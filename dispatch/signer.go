package dispatch

import (
	"crypto/ed25519"
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

// Sign returns the webhook-signature header value for a message, one entry
// per secret, separated by spaces: "v1,<base64 HMAC-SHA256(key,
// id.timestamp.body)>" for a "whsec_" secret, "v1a,<base64 ed25519
// signature of id.timestamp.body>" for a "whsk_" private key.
func Sign(secrets []string, msgID string, timestamp int64, body []byte) string {
	var b strings.Builder
	ts := strconv.FormatInt(timestamp, 10)
	var content []byte // id.timestamp.body, built for the first ed25519 key
	for i, secret := range secrets {
		if i > 0 {
			b.WriteByte(' ')
		}
		if key, ok := hookrelay.SigningKeyOf(secret); ok {
			if content == nil {
				content = make([]byte, 0, len(msgID)+len(ts)+2+len(body))
				content = append(append(append(append(append(content, msgID...), '.'), ts...), '.'), body...)
			}
			b.WriteString("v1a,")
			b.WriteString(base64.StdEncoding.EncodeToString(ed25519.Sign(key, content)))
			continue
		}
		mac := hmac.New(sha256.New, secretKey(secret))
		mac.Write([]byte(msgID))
		mac.Write([]byte{'.'})
		mac.Write([]byte(ts))
		mac.Write([]byte{'.'})
		mac.Write(body)
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
