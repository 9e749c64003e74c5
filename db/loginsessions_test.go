package db_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func sessionToken(i int) []byte {
	h := sha256.Sum256([]byte(fmt.Sprintf("token-%d", i)))
	return h[:]
}

// A session is valid until it expires, is revoked, or its credential is
// replaced (admin token, merchant key); the merchant's key rotation ends its
// sessions only.
func TestDashboardSessionValidity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	adminHash := hookrelay.HashKey("hra_admin_token_for_db_test_1")
	require.NoError(t, dbtest.SettingPut(ctx, store, db.AdminTokenSetting, hex.EncodeToString(adminHash)))
	m1, key1 := dbtest.Merchant(t, store, nil)
	m2, key2 := dbtest.Merchant(t, store, nil)
	now := time.Now().UTC().Truncate(time.Microsecond)
	open := func(i int, kind string, merchantID int64, cred []byte) {
		_, err := store.LoginSessionCreate(ctx, db.NewLoginSession{TokenSHA256: sessionToken(i), Kind: kind,
			MerchantID: merchantID, CredentialHash: cred, Now: now, ExpiresAt: now.Add(time.Hour), ClientAddr: "192.0.2.1"})
		require.NoError(t, err)
	}
	valid := func(i int, at time.Time) bool {
		_, err := store.LoginSessionValid(ctx, sessionToken(i), at)
		if err != nil {
			require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "%v", err)
			return false
		}
		return true
	}
	open(1, db.SessionAdmin, 0, adminHash)
	open(2, db.SessionMerchant, m1.ID, hookrelay.HashKey(key1))
	open(3, db.SessionMerchant, m2.ID, hookrelay.HashKey(key2))
	open(4, db.SessionMerchant, m1.ID, hookrelay.HashKey("hrm_not_the_key"))
	for i := 1; i <= 3; i++ {
		require.True(t, valid(i, now), "session %d", i)
	}
	require.False(t, valid(4, now), "opened with another credential")
	require.False(t, valid(1, now.Add(time.Hour)), "expired")
	require.False(t, valid(9, now), "unknown")

	s, err := store.LoginSessionValid(ctx, sessionToken(2), now)
	require.NoError(t, err)
	require.Equal(t, m1.ID, s.MerchantID)
	require.NoError(t, store.LoginSessionSeen(ctx, s.ID, now.Add(time.Minute)))
	list, err := store.LoginSessionList(ctx, now, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 4, "the list shows rows not revoked and not expired")
	i := slices.IndexFunc(list, func(v db.LoginSessionRecord) bool { return v.ID == s.ID })
	require.Equal(t, now.Add(time.Minute), list[i].LastSeenAt.UTC())

	_, n, err := store.MerchantKeyRotate(ctx, m1.ID, hookrelay.HashKey("hrm_rotated_key_for_db_test"), "hrm_rota", now)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.False(t, valid(2, now), "rotated merchant")
	require.True(t, valid(3, now), "other merchant")
	_, _, err = store.MerchantKeyRotate(ctx, 999999, hookrelay.HashKey("hrm_x"), "hrm_x", now)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	n, err = store.AdminTokenSet(ctx, adminHash, now)
	require.NoError(t, err)
	require.Zero(t, n, "the same token ends nothing")
	require.True(t, valid(1, now))
	n, err = store.AdminTokenSet(ctx, hookrelay.HashKey("hra_next_admin_token_for_db"), now)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.False(t, valid(1, now), "old admin token")

	ok, err := store.LoginSessionRevoke(ctx, s.ID+1, now)
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, valid(3, now), "revoked")
	require.NoError(t, store.LoginSessionEnd(ctx, sessionToken(3), now))

	deleted, err := store.LoginSessionsDeleteExpired(ctx, now.Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 4, deleted)
}

// BenchmarkDashboardSessionValid is the lookup every authenticated dashboard
// request makes: a session by its token hash among 10,000, with its
// credential's row, valid (admin and merchant) and unknown.
//
// Run: go test ./db -run '^$' -bench LoginSessionValid
func BenchmarkDashboardSessionValid(b *testing.B) {
	ctx := context.Background()
	store := dbtest.New(b)
	adminHash := hookrelay.HashKey("hra_admin_token_for_db_bench")
	if err := dbtest.SettingPut(ctx, store, db.AdminTokenSetting, hex.EncodeToString(adminHash)); err != nil {
		b.Fatal(err)
	}
	m, key := dbtest.Merchant(b, store, nil)
	now := time.Now()
	const rows = 10_000
	for i := range rows {
		s := db.NewLoginSession{TokenSHA256: sessionToken(i), Kind: db.SessionAdmin, CredentialHash: adminHash,
			Now: now, ExpiresAt: now.Add(time.Hour)}
		if i%2 == 1 {
			s.Kind, s.MerchantID, s.CredentialHash = db.SessionMerchant, m.ID, hookrelay.HashKey(key)
		}
		if _, err := store.LoginSessionCreate(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		token []byte
		ok    bool
	}{{"admin", sessionToken(rows / 2), true}, {"merchant", sessionToken(rows/2 + 1), true}, {"unknown", sessionToken(rows + 1), false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				_, err := store.LoginSessionValid(ctx, c.token, now)
				if (err == nil) != c.ok {
					b.Fatal(err)
				}
			}
		})
	}
}
