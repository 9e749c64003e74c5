package db_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/keyring"
)

// keysSharingAnID returns two different keys whose key ids are equal (a
// birthday search over 32-bit ids: some 80,000 keys).
func keysSharingAnID(t *testing.T) (string, string) {
	t.Helper()
	seen := map[string]string{}
	for {
		b := make([]byte, keyring.KeyBytes)
		_, _ = rand.Read(b)
		key := base64.StdEncoding.EncodeToString(b)
		k, err := keyring.Parse(key, "")
		require.NoError(t, err)
		if other, dup := seen[k.CurrentID()]; dup {
			return other, key
		}
		seen[k.CurrentID()] = key
	}
}

func ringOf(t *testing.T, cur, old string) *keyring.Keyring {
	t.Helper()
	k, err := keyring.Parse(cur, old)
	require.NoError(t, err)
	return k
}

// TestCheckKeysConcurrentStarts: stores starting at once on a fresh
// database, half with one key and half with another key of the same id,
// agree on one check value: the group whose key stored it passes, every
// store of the other group is refused (a mismatch, never a second check
// value), whichever wins.
func TestCheckKeysConcurrentStarts(t *testing.T) {
	t.Parallel()
	keyA, keyA2 := keysSharingAnID(t)
	url := dbtest.NewURL(t)
	ctx := context.Background()
	const each = 4
	var stores []*db.DB
	for i := range 2 * each {
		key := keyA
		if i%2 == 1 {
			key = keyA2
		}
		stores = append(stores, dbtest.Open(t, url, db.Config{Keys: ringOf(t, key, ""), MaxConns: 2}))
	}
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { _, errs[i] = s.CheckKeys(ctx) })
	}
	wg.Wait()
	passed := map[int]int{}
	for i, err := range errs {
		var refusal *db.KeyCheckError
		if err == nil {
			passed[i%2]++
			continue
		}
		require.True(t, errors.As(err, &refusal), "%v", err)
		require.Equal(t, []string{ringOf(t, keyA, "").CurrentID()}, refusal.Mismatched)
	}
	require.Len(t, passed, 1, "one key's group passes: %v", errs)
	for _, n := range passed {
		require.Equal(t, each, n)
	}
}

// TestCheckKeys: the first start stores the check value; values under a key
// id the store does not hold are refused (naming the id and the columns)
// unless the id is declared lost; an old key keeps its values readable and
// gets its own check value; a key under the id of the data's key that is
// not that key is refused even before any check value exists (it does not
// open a stored value).
func TestCheckKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	keyA, keyB := keyring.Generate(), keyring.Generate()
	idA, idB := ringOf(t, keyA, "").CurrentID(), ringOf(t, keyB, "").CurrentID()
	a := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyA, "")})
	res, err := a.CheckKeys(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{idA}, res.Written)
	res, err = a.CheckKeys(ctx)
	require.NoError(t, err)
	require.Empty(t, res.Written, "stored once")
	dbtest.Endpoint(t, a, &dbtest.EndpointOpts{URL: "http://127.0.0.1:9/h"})
	_, err = a.WebSessionKey(ctx, "00112233445566778899aabbccddeeff")
	require.NoError(t, err)

	b := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyB, "")})
	_, err = b.CheckKeys(ctx)
	var refusal *db.KeyCheckError
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, map[string]int64{"endpoint_secrets.secret": 1, "settings.web_session_key": 1}, refusal.Missing[idA])
	require.ErrorContains(t, err, "the database holds 2 values sealed under key id "+idA)

	lost := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyB, ""), LostKeyIDs: []string{idA}})
	res, err = lost.CheckKeys(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{idA: 2}, res.Lost)
	require.Equal(t, []string{idB}, res.Written)

	rotating := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyB, keyA)})
	res, err = rotating.CheckKeys(ctx)
	require.NoError(t, err)
	require.Empty(t, res.Written, "both keys have their check value already")

	// Data under a key id with no check value yet (stored before key
	// checks existed): another key under that id does not open it.
	k1, k2 := keysSharingAnID(t)
	url2 := dbtest.NewURL(t)
	old := dbtest.Open(t, url2, db.Config{Keys: ringOf(t, k1, "")})
	dbtest.Endpoint(t, old, nil)
	twin := dbtest.Open(t, url2, db.Config{Keys: ringOf(t, k2, "")})
	_, err = twin.CheckKeys(ctx)
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, []string{ringOf(t, k1, "").CurrentID()}, refusal.Mismatched)
	_, err = old.CheckKeys(ctx)
	require.NoError(t, err, "the right key opens the stored value and gets its check value")
}

// TestResealLeavesLostValues: a re-seal pass leaves the values under a key
// id declared lost as they are (counted) and re-seals the rest, values of
// the same endpoint row included; without the declaration it stops.
func TestResealLeavesLostValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	keyA, keyB := keyring.Generate(), keyring.Generate()
	idA := ringOf(t, keyA, "").CurrentID()
	a := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyA, "")})
	ep, _ := dbtest.Endpoint(t, a, nil)
	f := db.EndpointFieldsOf(ep)
	f.Headers = map[string]string{"X-One": "one"}
	_, err := a.EndpointUpdate(ctx, ep.ID, f, "")
	require.NoError(t, err)

	b := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyB, "")})
	_, err = b.Reseal(ctx, 10)
	require.ErrorContains(t, err, "key id "+idA)
	lost := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyB, ""), LostKeyIDs: []string{idA}})
	n, err := lost.Reseal(ctx, 10)
	require.NoError(t, err)
	require.EqualValues(t, 2, n.Lost, "the secret and the header value")
	got, err := lost.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Unreadable)
	require.Equal(t, []string{"secret", "headers"}, got.Unreadable.Fields())
}

// TestEndpointReadWithUnreadableValues: an endpoint whose header value,
// credentials and signing secret this store cannot open reads without them
// (no error), says which and why; an update of another field keeps them as
// stored (the right key still opens them); headers and credentials given
// anew replace them.
func TestEndpointReadWithUnreadableValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	keyA, keyB := keyring.Generate(), keyring.Generate()
	idA := ringOf(t, keyA, "").CurrentID()
	a := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyA, "")})
	ep, secret := dbtest.Endpoint(t, a, nil)
	f := db.EndpointFieldsOf(ep)
	f.Headers = map[string]string{"X-One": "one", "X-Two": "two"}
	f.Auth = &db.EndpointAuth{Type: "bearer", Token: "tok"}
	_, err := a.EndpointUpdate(ctx, ep.ID, f, "")
	require.NoError(t, err)

	b := dbtest.Open(t, url, db.Config{Keys: ringOf(t, keyB, "")})
	healthy, healthySecret := dbtest.Endpoint(t, b, nil)
	got, err := b.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Unreadable)
	require.Equal(t, []string{"secret", "headers", "auth"}, got.Unreadable.Fields())
	require.Equal(t, []string{"X-One", "X-Two"}, got.Unreadable.Headers)
	require.Contains(t, got.Unreadable.Reason, "key id "+idA)
	require.Equal(t, map[string]string{"X-One": "", "X-Two": ""}, got.Headers)
	require.Nil(t, got.Auth)
	list, err := b.EndpointList(ctx, 0, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 2)
	secrets, err := b.EndpointSecretsActive(ctx, ep.ID)
	require.NoError(t, err)
	require.Empty(t, secrets[0].Secret)
	require.Contains(t, secrets[0].Unreadable, "key id "+idA)

	// Loaded together, each endpoint is opened on its own.
	cfgs, err := b.EndpointConfigLoad(ctx, []int64{ep.ID, healthy.ID})
	require.NoError(t, err)
	require.Len(t, cfgs, 2)
	for _, c := range cfgs {
		if c.ID == ep.ID {
			require.Contains(t, c.Unreadable, "key id "+idA)
		} else {
			require.Empty(t, c.Unreadable)
			require.Equal(t, []string{healthySecret}, c.Secrets)
		}
	}

	// An update of another field keeps them as they are stored.
	f = db.EndpointFieldsOf(got)
	require.True(t, f.KeepHeaders && f.KeepAuth)
	f.Description = "edited"
	_, err = b.EndpointUpdate(ctx, ep.ID, f, "")
	require.NoError(t, err)
	back, err := a.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Nil(t, back.Unreadable, "the right key still opens everything")
	require.Equal(t, "edited", back.Description)
	require.Equal(t, map[string]string{"X-One": "one", "X-Two": "two"}, back.Headers)
	require.Equal(t, "tok", back.Auth.Token)
	sa, err := a.EndpointSecretsActive(ctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, secret, sa[0].Secret)

	// Replaced: a new secret, new headers and credentials.
	f = db.EndpointFieldsOf(got)
	f.KeepHeaders, f.KeepAuth = false, false
	f.Headers, f.Auth = map[string]string{"X-New": "new"}, nil
	up, err := b.EndpointUpdate(ctx, ep.ID, f, "")
	require.NoError(t, err)
	require.Equal(t, []string{"secret"}, up.Unreadable.Fields())
	require.NoError(t, b.EndpointSecretRotate(ctx, ep.ID, "whsec_bmV3"))
	got, err = b.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Nil(t, got.Unreadable)
	cfgs, err = b.EndpointConfigLoad(ctx, []int64{ep.ID})
	require.NoError(t, err)
	require.Empty(t, cfgs[0].Unreadable)
	require.Equal(t, []string{"whsec_bmV3"}, cfgs[0].Secrets, "the old secret, unreadable, is left out")
}
