package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func TestCarrierAndMerchantStore(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, key := dbtest.Carrier(t, store, &dbtest.CarrierOpts{Name: "acme", SigningSecret: "s3cret"})
	require.Equal(t, "tracking_no", c.OrderingKeyField)
	got, err := store.CarrierByKeyHash(ctx, hookrelay.HashKey(key))
	require.NoError(t, err)
	require.Equal(t, c.ID, got.ID)
	require.Equal(t, "s3cret", got.SigningSecret)
	_, err = store.CarrierCreate(ctx, db.CarrierCreateParams{Name: "acme", APIKeyHash: []byte("x"), APIKeyPrefix: "x"})
	require.Equal(t, hookrelay.ECONFLICT, hookrelay.ErrorCode(err))
	_, err = store.CarrierByKeyHash(ctx, []byte("nope"))
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.ErrorCode(err))

	m, mkey := dbtest.Merchant(t, store, nil)
	gm, err := store.MerchantByKeyHash(ctx, hookrelay.HashKey(mkey))
	require.NoError(t, err)
	require.Equal(t, m.ID, gm.ID)
	list, err := store.MerchantList(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
}

func TestEndpointLifecycle(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	m, _ := dbtest.Merchant(t, store, nil)
	ep, secret := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{
		MerchantID: m.ID, RetrySchedule: []time.Duration{5 * time.Second, time.Minute}, EventTypes: []string{"delivered"},
	})
	require.Equal(t, db.EndpointEnabled, ep.Status)
	require.Equal(t, []time.Duration{5 * time.Second, time.Minute}, ep.RetrySchedule)
	require.Equal(t, 15*time.Second, ep.Timeout)
	require.Equal(t, 10, ep.MaxInFlight)

	secrets, err := store.EndpointSecretsActive(ctx, ep.ID)
	require.NoError(t, err)
	require.Len(t, secrets, 1)
	require.Equal(t, secret, secrets[0].Secret)
	require.NoError(t, store.EndpointSecretRotate(ctx, ep.ID, "whsec_new"))
	secrets, err = store.EndpointSecretsActive(ctx, ep.ID)
	require.NoError(t, err)
	require.Len(t, secrets, 2)
	require.Equal(t, "whsec_new", secrets[0].Secret)
	require.Nil(t, secrets[0].ExpiresAt)
	require.NotNil(t, secrets[1].ExpiresAt)
	require.WithinDuration(t, time.Now().Add(db.SecretOverlap), *secrets[1].ExpiresAt, time.Minute)

	f := db.EndpointFieldsOf(ep)
	f.Description = "changed"
	up, err := store.EndpointUpdate(ctx, ep.ID, f, "")
	require.NoError(t, err)
	require.Equal(t, "changed", up.Description)

	dis, err := store.EndpointDisable(ctx, ep.ID, "by test")
	require.NoError(t, err)
	require.Equal(t, db.EndpointDisabled, dis.Status)
	routes, err := store.EndpointRoutes(ctx)
	require.NoError(t, err)
	require.Len(t, routes, 1, "disabled endpoints still receive deliveries")

	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}})
	en, err := store.EndpointEnable(ctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointEnabled, en.Status)

	n, err := store.EndpointDelete(ctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	_, err = store.EndpointGet(ctx, ep.ID)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.ErrorCode(err))
	routes, err = store.EndpointRoutes(ctx)
	require.NoError(t, err)
	require.Empty(t, routes)
	_, err = store.EndpointDelete(ctx, ep.ID)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.ErrorCode(err))
}

// TestEndpointSignatureSwitch: an update that changes the scheme with a new
// key rotates it in in the same transaction (the old secret keeps signing
// for the overlap) and records its public key; rotating back to hmac clears
// the public key.
func TestEndpointSignatureSwitch(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	ep, secret := dbtest.Endpoint(t, store, nil)
	require.Equal(t, hookrelay.SignatureHMAC, ep.Signature)
	require.Empty(t, ep.PublicKey)

	key := hookrelay.NewSigningKey()
	f := db.EndpointFieldsOf(ep)
	f.Signature = hookrelay.SignatureEd25519
	up, err := store.EndpointUpdate(ctx, ep.ID, f, key)
	require.NoError(t, err)
	require.Equal(t, hookrelay.SignatureEd25519, up.Signature)
	require.Equal(t, hookrelay.PublicKeyOf(key), up.PublicKey)
	secrets, err := store.EndpointSecretsActive(ctx, ep.ID)
	require.NoError(t, err)
	require.Len(t, secrets, 2)
	require.Equal(t, up.PublicKey, secrets[0].PublicKey)
	require.Equal(t, secret, secrets[1].Secret)
	require.NotNil(t, secrets[1].ExpiresAt, "the HMAC secret signs for the overlap only")

	// An update without a new key keeps the public key.
	f.Description = "again"
	up, err = store.EndpointUpdate(ctx, ep.ID, f, "")
	require.NoError(t, err)
	require.Equal(t, hookrelay.PublicKeyOf(key), up.PublicKey)

	require.NoError(t, store.EndpointSecretRotate(ctx, ep.ID, "whsec_back"))
	got, err := store.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Empty(t, got.PublicKey)
}
