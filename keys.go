package hookrelay

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// Key prefixes tell kinds of credentials apart at a glance (and in secret
// scanners). A key of one kind never authenticates as another.
const (
	AdminTokenPrefix  = "hra_"
	CarrierKeyPrefix  = "hrc_"
	MerchantKeyPrefix = "hrm_"
	SecretPrefix      = "whsec_"
)

// NewKey returns a new random credential: prefix followed by 32 random bytes
// in unpadded URL-safe base64.
func NewKey(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics on a broken source)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashKey returns the stored form of a credential: its SHA-256. Keys carry
// 256 bits of randomness, so a fast hash is enough.
func HashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// KeyMatches reports whether key hashes to hash, in constant time.
func KeyMatches(key string, hash []byte) bool {
	return subtle.ConstantTimeCompare(HashKey(key), hash) == 1
}

// KeyDisplayPrefix returns the part of a key safe to show (its kind and first
// four characters), to tell keys apart in lists.
func KeyDisplayPrefix(key string) string {
	if len(key) <= 8 {
		return key
	}
	return key[:8]
}

// NewSecret returns a new endpoint signing secret in the Standard Webhooks
// form: "whsec_" followed by the standard (padded) base64 of 32 random bytes,
// which off-the-shelf Standard Webhooks verifiers decode.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}
