package dispatch

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
)

// FuzzSign: every webhook-signature entry verifies with a separate Standard
// Webhooks computation (key = base64-decoded secret after "whsec_"), one
// entry per secret, and the header never lets a body of another message pass.
func FuzzSign(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"), []byte("second secret"), "msg_1", int64(1700000000), []byte(`{"a":1}`))
	f.Add([]byte{}, []byte{0}, "", int64(0), []byte(nil))
	f.Add([]byte("k"), []byte("k"), "msg_ with spaces", int64(-5), []byte("body.with.dots"))
	f.Fuzz(func(t *testing.T, key1, key2 []byte, msgID string, ts int64, body []byte) {
		secrets := []string{
			"whsec_" + base64.StdEncoding.EncodeToString(key1),
			"whsec_" + base64.StdEncoding.EncodeToString(key2),
		}
		header := Sign(secrets, msgID, ts, body)
		entries := strings.Split(header, " ")
		if len(entries) != 2 {
			t.Fatalf("%d entries for 2 secrets: %q", len(entries), header)
		}
		content := msgID + "." + strconv.FormatInt(ts, 10) + "." + string(body)
		for i, key := range [][]byte{key1, key2} {
			mac := hmac.New(sha256.New, key)
			mac.Write([]byte(content))
			if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); entries[i] != want {
				t.Fatalf("entry %d = %q, want %q", i, entries[i], want)
			}
		}
		if other := Sign(secrets, msgID, ts, append(append([]byte(nil), body...), 'x')); other == header {
			t.Fatal("two bodies, one signature")
		}
	})
}
