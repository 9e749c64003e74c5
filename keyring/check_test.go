package keyring_test

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/keyring"
)

func TestCheckValueVerifiesOnlyTheSameKey(t *testing.T) {
	t.Parallel()
	a, b := keyring.Generate(), keyring.Generate()
	ringA, err := keyring.Parse(a, "")
	require.NoError(t, err)
	check, ok := ringA.CheckValue(ringA.CurrentID())
	require.True(t, ok)
	id, ok := keyring.KeyID(check)
	require.True(t, ok)
	require.Equal(t, ringA.CurrentID(), id, "a check value names its key id")
	require.NoError(t, ringA.VerifyCheck(check))

	// After a rotation the old key still verifies its own check value, and
	// the keyring can make one for each of its keys.
	rotated, err := keyring.Parse(b, a)
	require.NoError(t, err)
	require.NoError(t, rotated.VerifyCheck(check))
	require.Equal(t, []string{rotated.CurrentID(), ringA.CurrentID()}, rotated.IDs())
	oldCheck, ok := rotated.CheckValue(ringA.CurrentID())
	require.True(t, ok)
	require.NoError(t, ringA.VerifyCheck(oldCheck))

	ringB, err := keyring.Parse(b, "")
	require.NoError(t, err)
	require.ErrorIs(t, ringB.VerifyCheck(check), keyring.ErrUnknownKey)
	_, ok = ringB.CheckValue(ringA.CurrentID())
	require.False(t, ok)
	_, err = ringA.Open("endpoint_secret", check)
	require.ErrorIs(t, err, keyring.ErrNotAuthentic, "a check value opens for nothing else")
}

// TestCheckValueTellsKeysWithTheSameID: key ids are 32 bits, so two keys
// can share one; the check value made with one does not verify with the
// other, where the id alone would have passed.
func TestCheckValueTellsKeysWithTheSameID(t *testing.T) {
	t.Parallel()
	seen := map[string][]byte{}
	var k1, k2 []byte
	for k1 == nil {
		k := make([]byte, keyring.KeyBytes)
		_, _ = rand.Read(k)
		id := keyring.KeyIDOf(k)
		if other, dup := seen[id]; dup {
			k1, k2 = other, k
		}
		seen[id] = k
	}
	r1, err := keyring.Parse(base64.StdEncoding.EncodeToString(k1), "")
	require.NoError(t, err)
	r2, err := keyring.Parse(base64.StdEncoding.EncodeToString(k2), "")
	require.NoError(t, err)
	require.Equal(t, r1.CurrentID(), r2.CurrentID())
	check, _ := r1.CheckValue(r1.CurrentID())
	require.ErrorIs(t, r2.VerifyCheck(check), keyring.ErrCheckMismatch)
	require.True(t, strings.HasPrefix(check, r2.CurrentPrefix()))
}

func TestKeyID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"hrk1:0a1b2c3d:xyz": "0a1b2c3d", "hrk1::xyz": "", "whsec_x": "", "hrk1:nocolon": ""} {
		got, ok := keyring.KeyID(in)
		require.Equal(t, want, got, in)
		require.Equal(t, want != "", ok, in)
	}
}
