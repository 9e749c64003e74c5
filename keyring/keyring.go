// Package keyring seals the secrets hookrelay must be able to read back
// (endpoint signing secrets, custom header values, endpoint credentials)
// with AES-256-GCM before they are stored. One key seals; older keys only
// open, so rows sealed before a key rotation stay readable until they are
// re-sealed.
//
// A sealed value is text: "hrk1:<key id>:<base64url nonce+ciphertext>". The
// key id (8 hex digits of a hash of the key) names the key that sealed it,
// so opening picks the right key without trying them all and a rotation can
// find the rows still sealed under an older key.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Prefix starts every sealed value (and no plaintext secret hookrelay makes:
// those start with "whsec_").
const Prefix = "hrk1:"

// KeyBytes is the length of a key: AES-256.
const KeyBytes = 32

// Keyring holds the key that seals and every key that opens.
type Keyring struct {
	currentID string
	aeads     map[string]cipher.AEAD // by key id; holds the current key too
}

// Generate returns a new random key in the form Parse reads: the standard
// base64 of 32 random bytes.
func Generate() string {
	b := make([]byte, KeyBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand panics on a broken source)
	return base64.StdEncoding.EncodeToString(b)
}

// Parse returns the keyring with current as the sealing key and old (keys
// separated by commas or spaces, possibly empty) as keys that only open.
// Each key is the base64 (standard or URL-safe, padded or not) of 32 bytes.
// Errors never contain key material.
func Parse(current, old string) (*Keyring, error) {
	cur, err := decodeKey(current)
	if err != nil {
		return nil, fmt.Errorf("current key: %w", err)
	}
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	k.currentID = k.add(cur)
	for i, raw := range strings.FieldsFunc(old, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		b, err := decodeKey(raw)
		if err != nil {
			return nil, fmt.Errorf("old key %d: %w", i+1, err)
		}
		k.add(b)
	}
	return k, nil
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeyBytes {
				return nil, fmt.Errorf("decodes to %d bytes, want %d", len(b), KeyBytes)
			}
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// add registers key and returns its id.
func (k *Keyring) add(key []byte) string {
	id := keyID(key)
	block, _ := aes.NewCipher(key) // 32 bytes: cannot fail
	aead, _ := cipher.NewGCM(block)
	k.aeads[id] = aead
	return id
}

// keyID is the id of key: 8 hex digits of a hash of it.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("hookrelay keyring id\x00"), key...))
	return hex.EncodeToString(sum[:4])
}

// CurrentPrefix is how every value sealed under the current key begins; a
// value that does not begin so is plaintext or sealed under an older key.
func (k *Keyring) CurrentPrefix() string { return Prefix + k.currentID + ":" }

// CurrentID is the id of the key that seals.
func (k *Keyring) CurrentID() string { return k.currentID }

// IDs returns the id of every key of the keyring: the current key's first,
// then the older keys' in order.
func (k *Keyring) IDs() []string {
	out := []string{k.currentID}
	for _, id := range slices.Sorted(maps.Keys(k.aeads)) {
		if id != k.currentID {
			out = append(out, id)
		}
	}
	return out
}

// Holds reports whether the keyring has a key with id.
func (k *Keyring) Holds(id string) bool {
	_, ok := k.aeads[id]
	return ok
}

// Seal encrypts plain under the current key, bound to purpose (a value
// sealed for one purpose does not open for another).
func (k *Keyring) Seal(purpose string, plain []byte) string {
	return k.sealWith(k.currentID, purpose, plain)
}

// sealWith encrypts plain under the key with id, which the keyring holds.
func (k *Keyring) sealWith(id, purpose string, plain []byte) string {
	aead := k.aeads[id]
	out := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(out)
	out = aead.Seal(out, out, plain, []byte(purpose))
	return Prefix + id + ":" + base64.RawURLEncoding.EncodeToString(out)
}

// ErrUnknownKey means a value was sealed under a key the keyring does not
// hold (add it to the old keys).
var ErrUnknownKey = errors.New("sealed under a key this process does not have")

// ErrNotAuthentic means a value names a key the keyring holds but does not
// open under it: damaged, sealed for another purpose, or sealed under
// another key that has the same id (an id is only 32 bits of the key's
// hash).
var ErrNotAuthentic = errors.New("value does not authenticate (damaged, sealed for another purpose, or under another key with the same id)")

// Open decrypts a value Seal returned (under any key of the keyring) for
// purpose.
func (k *Keyring) Open(purpose, sealed string) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return nil, errors.New("not a sealed value")
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, errors.New("malformed sealed value")
	}
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("key id %s: %w", id, ErrUnknownKey)
	}
	raw, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("malformed sealed value")
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(purpose))
	if err != nil {
		return nil, fmt.Errorf("key id %s: %w", id, ErrNotAuthentic)
	}
	return plain, nil
}

// IsSealed reports whether s is a sealed value rather than plaintext.
func IsSealed(s string) bool { return strings.HasPrefix(s, Prefix) }

// KeyID returns the id of the key a sealed value names; false when s is
// not a sealed value.
func KeyID(sealed string) (string, bool) {
	rest, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok || id == "" {
		return "", false
	}
	return id, true
}
