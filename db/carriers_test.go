package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestCarrierKeyRotateOverlap: the database's own answer for a key (what a
// process without the change in its snapshot asks) follows the overlap.
func TestCarrierKeyRotateOverlap(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, k1 := dbtest.Carrier(t, store, &dbtest.CarrierOpts{Name: "acme"})
	k2, k3 := hookrelay.NewKey(hookrelay.CarrierKeyPrefix), hookrelay.NewKey(hookrelay.CarrierKeyPrefix)
	found := func(key string) bool {
		got, err := store.CarrierByKeyHash(ctx, hookrelay.HashKey(key))
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			return false
		}
		require.NoError(t, err)
		require.Equal(t, c.ID, got.ID)
		return true
	}

	rot, err := store.CarrierKeyRotate(ctx, c.ID, hookrelay.HashKey(k2), hookrelay.KeyDisplayPrefix(k2), time.Hour)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), rot.PreviousExpireAt, time.Minute)
	require.True(t, found(k1))
	require.True(t, found(k2))
	live, err := store.CarrierPreviousKeysLive(ctx)
	require.NoError(t, err)
	require.Len(t, live, 1)
	require.Equal(t, hookrelay.HashKey(k1), live[0].APIKeyHash)

	_, err = store.CarrierKeyRotate(ctx, c.ID, hookrelay.HashKey(k3), hookrelay.KeyDisplayPrefix(k3), 0)
	require.NoError(t, err)
	require.False(t, found(k1), "the earlier key's overlap ends with a rotation without one")
	require.False(t, found(k2))
	require.True(t, found(k3))
	live, err = store.CarrierPreviousKeysLive(ctx)
	require.NoError(t, err)
	require.Empty(t, live)

	_, err = store.CarrierKeyRotate(ctx, 424242, hookrelay.HashKey(k1), "x", 0)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	// A deleted carrier's keys, previous ones included, find nothing.
	_, err = store.CarrierKeyRotate(ctx, c.ID, hookrelay.HashKey(k1), hookrelay.KeyDisplayPrefix(k1), time.Hour)
	require.NoError(t, err)
	require.True(t, found(k3))
	require.NoError(t, store.CarrierDelete(ctx, c.ID))
	require.False(t, found(k1))
	require.False(t, found(k3))
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(store.CarrierDelete(ctx, c.ID)))
}

// TestCarrierSignatureStoredSealed: the declaration round-trips, the
// secret is sealed at rest, and a carrier of the original scheme (a row
// with only signing_secret) reads as its declaration.
func TestCarrierSignatureStoredSealed(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := context.Background()
	const secret = "a-carrier-secret-0123"
	sig := hookrelay.InboundSignature{Scheme: "hmac", Algorithm: "md5", Query: "sign", TimestampHeader: "X-Ts", Secret: secret}
	require.NoError(t, sig.Check())
	c, err := store.CarrierCreate(ctx, db.CarrierCreateParams{Name: "sealed", APIKeyHash: []byte("h1"), APIKeyPrefix: "h1", Signature: sig})
	require.NoError(t, err)
	got, err := store.CarrierGet(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, "md5", got.Signature.Algorithm)
	require.Equal(t, "sign", got.Signature.Query)
	require.Equal(t, 5*time.Minute, got.Signature.Tolerance)
	require.Equal(t, secret, got.Signature.Secret)

	legacy, err := store.CarrierCreate(ctx, db.CarrierCreateParams{Name: "legacy", APIKeyHash: []byte("h2"), APIKeyPrefix: "h2", SigningSecret: secret})
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "UPDATE carriers SET signature = NULL WHERE id = $1", legacy.ID)
	require.NoError(t, err)
	got, err = store.CarrierGet(ctx, legacy.ID)
	require.NoError(t, err)
	want := hookrelay.LegacyInboundSignature(secret)
	require.Equal(t, want.Header, got.Signature.Header)
	require.Equal(t, want.Prefix, got.Signature.Prefix)
	require.Equal(t, secret, got.Signature.Secret)
	require.True(t, got.Signature.Signed())

	rows, err := conn.Query(ctx, "SELECT coalesce(signature::text, '') || signing_secret FROM carriers")
	require.NoError(t, err)
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, stored, 2)
	for _, s := range stored {
		require.NotContains(t, s, secret)
	}
}
