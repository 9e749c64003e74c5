package dbtest

import (
	"github.com/hookrelay/hookrelay/keyring"
)

// TestEncryptionKey is the encryption key of every test store (fixed, so
// the processes of one test, a child dispatcher say, share it). Never use
// it outside tests.
const TestEncryptionKey = "dGVzdC1vbmx5LWVuY3J5cHRpb24ta2V5LTMyLWJ5dGU="

// Keys returns the keyring of TestEncryptionKey.
func Keys() *keyring.Keyring {
	k, err := keyring.Parse(TestEncryptionKey, "")
	if err != nil {
		panic(err)
	}
	return k
}
