package access

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// TOTP (RFC 6238) as authenticator apps use it: HMAC-SHA1, 30-second
// steps, 6 digits, a 160-bit secret in unpadded base32.
const (
	totpStep   = 30 * time.Second
	totpDigits = 6
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewTOTPSecret returns a new random TOTP secret (base32).
func NewTOTPSecret() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return b32.EncodeToString(b)
}

// TOTPURI is the otpauth:// URI an authenticator app enrols secret from.
func TOTPURI(issuer, account, secret string) string {
	v := url.Values{"secret": {secret}, "issuer": {issuer}, "algorithm": {"SHA1"}, "digits": {"6"}, "period": {"30"}}
	return "otpauth://totp/" + url.PathEscape(issuer+":"+account) + "?" + v.Encode()
}

// TOTPCode returns the code of secret at t.
func TOTPCode(secret string, t time.Time) (string, error) {
	key, err := b32.DecodeString(strings.ToUpper(strings.TrimSpace(secret)))
	if err != nil {
		return "", fmt.Errorf("TOTP secret: %w", err)
	}
	return hotp(key, uint64(t.Unix()/int64(totpStep/time.Second))), nil
}

func hotp(key []byte, counter uint64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	m := hmac.New(sha1.New, key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%0*d", totpDigits, v%1_000_000)
}

// TOTPValid reports whether code is secret's code at t or one step either
// side (clocks drift; a code typed at a step's end arrives in the next).
func TOTPValid(secret, code string, t time.Time) bool {
	_, ok := TOTPStep(secret, code, t)
	return ok
}

// TOTPStep is TOTPValid that also returns the time step whose code code
// is, for refusing a code used already (a step at most once).
func TOTPStep(secret, code string, t time.Time) (int64, bool) {
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if len(code) != totpDigits {
		return 0, false
	}
	key, err := b32.DecodeString(strings.ToUpper(strings.TrimSpace(secret)))
	if err != nil {
		return 0, false
	}
	c := uint64(t.Unix() / int64(totpStep/time.Second))
	var step uint64
	ok := 0
	for _, n := range []uint64{c - 1, c, c + 1} {
		if subtle.ConstantTimeCompare([]byte(hotp(key, n)), []byte(code)) == 1 {
			step, ok = n, 1
		}
	}
	return int64(step), ok == 1
}
