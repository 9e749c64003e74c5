package hookrelay

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// Key prefixes tell kinds of credentials apart at a glance (and in secret
// scanners). A key of one kind never authenticates as another.
const (
	AdminTokenPrefix  = "hra_"
	CarrierKeyPrefix  = "hrc_"
	MerchantKeyPrefix = "hrm_"
	// APITokenPrefix starts the API tokens of users and services.
	APITokenPrefix = "hrt_"
	SecretPrefix   = "whsec_"
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

// Signature schemes of an endpoint (Standard Webhooks): "hmac" signs with a
// shared secret (v1, HMAC-SHA256), "ed25519" with a private key whose public
// key receivers verify with (v1a).
const (
	SignatureHMAC    = "hmac"
	SignatureEd25519 = "ed25519"
)

// Prefixes of an ed25519 key pair (Standard Webhooks): the private key
// (never shown) and the public key receivers verify with.
const (
	SigningKeyPrefix = "whsk_"
	PublicKeyPrefix  = "whpk_"
)

// NewSigningKey returns a new ed25519 private key in the form hookrelay
// stores it: "whsk_" followed by the standard base64 of the 64-byte private
// key (seed and public key, as crypto/ed25519 holds it).
func NewSigningKey() string {
	_, priv, _ := ed25519.GenerateKey(rand.Reader) // never fails with crypto/rand
	return SigningKeyPrefix + base64.StdEncoding.EncodeToString(priv)
}

// SigningKeyOf returns the ed25519 private key of a "whsk_" secret (its
// 64-byte form or its 32-byte seed); ok is false for any other secret.
func SigningKeyOf(secret string) (key ed25519.PrivateKey, ok bool) {
	s, found := strings.CutPrefix(secret, SigningKeyPrefix)
	if !found {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	switch len(b) {
	case ed25519.PrivateKeySize:
		return ed25519.PrivateKey(b), true
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), true
	}
	return nil, false
}

// PublicKeyOf returns the "whpk_" public key (standard base64 of its 32
// bytes) of a "whsk_" secret, "" for any other secret.
func PublicKeyOf(secret string) string {
	key, ok := SigningKeyOf(secret)
	if !ok {
		return ""
	}
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
}

// NewSigningSecret returns a new secret for an endpoint of signature scheme
// scheme: a "whsec_" secret for hmac, a "whsk_" private key for ed25519.
func NewSigningSecret(scheme string) string {
	if scheme == SignatureEd25519 {
		return NewSigningKey()
	}
	return NewSecret()
}
