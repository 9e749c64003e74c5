package ops_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/ops"
)

// A merchant key rotation replaces the key and ends the merchant's sessions;
// revoking an unknown session is "not found".
func TestRotateMerchantKeyAndRevokeSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	s := ops.New(store, ops.Config{})
	m, oldKey := dbtest.Merchant(t, store, nil)
	now := time.Now()
	_, err := store.LoginSessionCreate(ctx, db.NewLoginSession{TokenSHA256: []byte("token-hash"), Kind: db.SessionMerchant,
		MerchantID: m.ID, CredentialHash: hookrelay.HashKey(oldKey), Now: now, ExpiresAt: now.Add(time.Hour)})
	require.NoError(t, err)
	list, err := s.Sessions(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)

	rot, err := s.RotateMerchantKey(ctx, m.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, rot.SessionsEnded)
	require.Equal(t, m.ID, rot.Merchant.ID)
	require.Equal(t, hookrelay.KeyDisplayPrefix(rot.Key), rot.Merchant.APIKeyPrefix)
	_, err = store.MerchantByKeyHash(ctx, hookrelay.HashKey(oldKey))
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "the old key")
	got, err := store.MerchantByKeyHash(ctx, hookrelay.HashKey(rot.Key))
	require.NoError(t, err)
	require.Equal(t, m.ID, got.ID)
	list, err = s.Sessions(ctx, 0, 10)
	require.NoError(t, err)
	require.Empty(t, list)

	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(s.RevokeSession(ctx, 424242)))
	_, err = s.RotateMerchantKey(ctx, 424242)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
}
