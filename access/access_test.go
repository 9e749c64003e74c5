package access_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/access"
)

func TestPassword(t *testing.T) {
	t.Parallel()
	h := access.HashPassword("correct horse battery")
	require.True(t, access.CheckPassword(h, "correct horse battery"))
	require.False(t, access.CheckPassword(h, "correct horse batterY"))
	require.False(t, access.CheckPassword("", ""))
	require.False(t, access.CheckPassword("$argon2id$v=19$m=1,t=1,p=1$$", "x"))
	require.NotEqual(t, h, access.HashPassword("correct horse battery"), "salted")
}

// The RFC 6238 test vectors (SHA-1, the ASCII secret "12345678901234567890"),
// cut to 6 digits.
func TestTOTPVectors(t *testing.T) {
	t.Parallel()
	secret := "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
	for _, tc := range []struct {
		unix int64
		code string
	}{{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"}, {1234567890, "005924"}, {2000000000, "279037"}} {
		got, err := access.TOTPCode(secret, time.Unix(tc.unix, 0))
		require.NoError(t, err)
		require.Equal(t, tc.code, got, tc.unix)
		require.True(t, access.TOTPValid(secret, tc.code, time.Unix(tc.unix+30, 0)), "a step late")
		require.False(t, access.TOTPValid(secret, tc.code, time.Unix(tc.unix+90, 0)), "three steps late")
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	for _, r := range access.Roles() {
		p, err := access.ParseRole(r.String())
		require.NoError(t, err)
		require.Equal(t, r, p)
		require.True(t, access.Owner.Allows(r))
		require.False(t, access.RoleNone.Allows(r))
	}
	require.False(t, access.Support.Allows(access.Operator))
	require.False(t, access.Owner.Allows(access.RoleNone))
}

// BenchmarkCheckPassword is a login's password check (argon2id, 19 MiB,
// two passes).
func BenchmarkCheckPassword(b *testing.B) {
	h := access.HashPassword("correct horse battery")
	for b.Loop() {
		access.CheckPassword(h, "correct horse battery")
	}
}
