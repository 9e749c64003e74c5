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

func TestCarrierAndMerchantStore(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, key := dbtest.Carrier(t, store, &dbtest.CarrierOpts{Name: "acme", SigningSecret: "s3cret"})
	require.Equal(t, "tracking_no", c.OrderingKeyField)
	got, err := store.CarrierByKeyHash(ctx, hookrelay.HashKey(key))
	require.NoError(t, err)
	require.Equal(t, c.ID, got.ID)
	require.Equal(t, "s3cret", got.Signature.Secret)
	_, err = store.CarrierCreate(ctx, db.CarrierCreateParams{Name: "acme", APIKeyHash: []byte("x"), APIKeyPrefix: "x"})
	require.Equal(t, hookrelay.ECONFLICT, hookrelay.CodeOf(err))
	_, err = store.CarrierByKeyHash(ctx, []byte("nope"))
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

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
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	routes, err = store.EndpointRoutes(ctx)
	require.NoError(t, err)
	require.Empty(t, routes)
	_, err = store.EndpointDelete(ctx, ep.ID)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
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

// TestEndpointDeleteRunsAgainAfterADeadlock: another transaction holds the
// last of the endpoint's deliveries (as an acknowledgement does) and then
// waits for one the delete already took: PostgreSQL aborts the delete as a
// deadlock (it waited first, so its check runs first), and the delete runs
// again and deletes every delivery once the other transaction is done.
func TestEndpointDeleteRunsAgainAfterADeadlock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	carrier, _ := dbtest.Carrier(t, store, nil)
	ep, _ := dbtest.Endpoint(t, store, nil)
	storeMany(t, store, carrier.ID, ep.ID, keysInQueue("del-", 4, 50))

	other, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer other.Close(context.WithoutCancel(ctx))
	// Its deadlock check comes long after the delete's (1 s by default).
	_, err = other.Exec(ctx, "SET deadlock_timeout = '30s'")
	require.NoError(t, err)
	tx, err := other.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var first, last int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT min(id), max(id) FROM deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&first, &last))
	_, err = tx.Exec(ctx, `SELECT id FROM deliveries WHERE id = $1 FOR UPDATE`, last)
	require.NoError(t, err)

	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := store.EndpointDelete(ctx, ep.ID)
		done <- result{n, err}
	}()
	watch, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer watch.Close(context.WithoutCancel(ctx))
	// The delete waits for the last row.
	require.Eventually(t, func() bool {
		var waiting bool
		// Outside the other transaction: a transaction reads
		// pg_stat_activity once and keeps what it read.
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			  AND query LIKE '%DELETE FROM deliveries WHERE endpoint_id%')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 20*time.Millisecond, "the delete never waited for the row held")
	// Now this transaction waits for the first row, which the delete holds:
	// a deadlock, the delete its victim.
	_, err = tx.Exec(ctx, `UPDATE deliveries SET attempt = attempt WHERE id = $1`, first)
	require.NoError(t, err, "the delete was the deadlock's victim, not this transaction")
	require.NoError(t, tx.Commit(ctx))

	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, int64(50), r.n)
	var left int
	require.NoError(t, other.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&left))
	require.Zero(t, left)
}
