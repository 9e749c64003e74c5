package keyring

import (
	"crypto/subtle"
	"errors"
	"fmt"
)

// A key check value is checkPlain sealed under a key for checkPurpose: it
// is stored with the data the key seals, and a process that holds a key of
// the same id verifies that it is the same key before it opens or seals
// anything (the key check values of key management systems). A sealed
// value rather than an HMAC of a constant: it reuses Seal and Open, names
// its key id like every sealed value, and keeps the key material inside
// the keyring; AES-GCM authenticates it, so another key under the same id
// fails to open it.
const (
	checkPurpose = "key_check_value"
	checkPlain   = "hookrelay encryption key check value v1"
)

// ErrCheckMismatch means a key check value names a key id the keyring
// holds, but the key under that id is not the one that made it.
var ErrCheckMismatch = errors.New("the key configured under this id is not the key the check value was made with")

// CheckValue returns a new key check value of the key with id; false when
// the keyring does not hold that key.
func (k *Keyring) CheckValue(id string) (string, bool) {
	if !k.Holds(id) {
		return "", false
	}
	return k.sealWith(id, checkPurpose, []byte(checkPlain)), true
}

// VerifyCheck reports whether check, a value CheckValue returned, was made
// with the key of the same id this keyring holds: nil when it was,
// ErrUnknownKey when the keyring holds no key of that id, ErrCheckMismatch
// when it holds another key under that id.
func (k *Keyring) VerifyCheck(check string) error {
	id, ok := KeyID(check)
	if !ok {
		return errors.New("not a key check value")
	}
	if !k.Holds(id) {
		return fmt.Errorf("key id %s: %w", id, ErrUnknownKey)
	}
	plain, err := k.Open(checkPurpose, check)
	if err != nil || subtle.ConstantTimeCompare(plain, []byte(checkPlain)) != 1 {
		return fmt.Errorf("key id %s: %w", id, ErrCheckMismatch)
	}
	return nil
}
