package storage

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeyComponents(t *testing.T) {
	t.Parallel()
	for key, want := range map[string][]string{
		"k":                       {"k"},
		"payloads/2026/11/29/123": {"payloads", "2026", "11", "29", "123"},
		".hidden/..x/x..":         {".hidden", "..x", "x.."},
		`back\slash`:              {`back\slash`},
	} {
		got, err := keyComponents(key)
		require.NoError(t, err, key)
		require.Equal(t, want, got, key)
	}
	for _, key := range []string{
		"", "/", "/abs", "a//b", "a/", "..", ".", "a/../b", "a/./b", "../..", "a/..",
		"nul\x00", strings.Repeat("x", maxKeyComponent+1) + "/y",
	} {
		_, err := keyComponents(key)
		require.Error(t, err, "%q", key)
	}
}

func TestValidBucket(t *testing.T) {
	t.Parallel()
	require.NoError(t, validBucket(DefaultBucket))
	for _, name := range []string{"", ".", "..", ".tmp", ".lock", "a/b", "../x", "UPPER", "ab"} {
		require.Error(t, validBucket(name), "%q", name)
	}
}
