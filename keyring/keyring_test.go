package keyring_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/keyring"
)

func TestSealOpenAcrossRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := keyring.Generate(), keyring.Generate()
	before, err := keyring.Parse(oldKey, "")
	require.NoError(t, err)
	sealed := before.Seal("endpoint_secret", []byte("whsec_abc"))
	require.True(t, keyring.IsSealed(sealed))
	require.True(t, strings.HasPrefix(sealed, before.CurrentPrefix()))
	require.NotContains(t, sealed, "whsec_abc")

	after, err := keyring.Parse(newKey, " , "+oldKey+",")
	require.NoError(t, err)
	require.False(t, strings.HasPrefix(sealed, after.CurrentPrefix()), "old rows are not under the new key")
	got, err := after.Open("endpoint_secret", sealed)
	require.NoError(t, err)
	require.Equal(t, "whsec_abc", string(got))

	_, err = after.Open("endpoint_auth", sealed)
	require.Error(t, err, "purpose is bound")

	alone, err := keyring.Parse(newKey, "")
	require.NoError(t, err)
	_, err = alone.Open("endpoint_secret", sealed)
	require.ErrorIs(t, err, keyring.ErrUnknownKey)
}

func TestParseRefusesBadKeysWithoutEchoingThem(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "not base64!!", "c2hvcnQ=", strings.Repeat("A", 64)} {
		_, err := keyring.Parse(bad, "")
		require.Error(t, err, bad)
		if bad != "" {
			require.NotContains(t, err.Error(), bad)
		}
	}
	_, err := keyring.Parse(keyring.Generate(), "bad")
	require.ErrorContains(t, err, "old key 1")
}
