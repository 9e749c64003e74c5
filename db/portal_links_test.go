package db_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// A portal link opens one session however many redeem it at once; an
// expired link, an unknown merchant and a link made before a key rotation
// open none; expired links are deleted.
func TestPortalLinkRedeemOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	m, _ := dbtest.Merchant(t, store, nil)
	now := time.Now().UTC().Truncate(time.Microsecond)
	link := func(i int, ttl time.Duration, readOnly bool) []byte {
		_, err := store.PortalLinkCreate(ctx, db.NewPortalLink{TokenSHA256: sessionToken(1000 + i), MerchantID: m.ID,
			ReadOnly: readOnly, Now: now, ExpiresAt: now.Add(ttl)})
		require.NoError(t, err)
		return sessionToken(1000 + i)
	}
	redeem := func(l []byte, i int) (db.LoginSession, error) {
		return store.PortalLinkRedeem(ctx, l, db.PortalRedemption{TokenSHA256: sessionToken(2000 + i), Now: now,
			ExpiresAt: now.Add(time.Hour), ClientAddr: "192.0.2.1"})
	}

	l := link(1, time.Minute, true)
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := redeem(l, i)
			if err == nil {
				wins.Add(1)
				assert.Equal(t, m.ID, s.MerchantID)
				assert.True(t, s.ReadOnly)
				assert.True(t, s.Portal)
				got, err := store.LoginSessionValid(ctx, sessionToken(2000+i), now)
				assert.NoError(t, err)
				assert.True(t, got.ReadOnly && got.Portal)
				return
			}
			assert.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
		}()
	}
	wg.Wait()
	require.Equal(t, int64(1), wins.Load())

	_, err := store.PortalLinkCreate(ctx, db.NewPortalLink{TokenSHA256: sessionToken(1100), MerchantID: 999999, Now: now, ExpiresAt: now.Add(time.Minute)})
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	expired := link(2, -time.Second, false)
	_, err = redeem(expired, 20)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	stale := link(3, time.Minute, false)
	_, _, err = store.MerchantKeyRotate(ctx, m.ID, hookrelay.HashKey("hrm_new_key_for_portal_test"), "hrm_new", now)
	require.NoError(t, err)
	_, err = redeem(stale, 30)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	n, err := store.PortalLinksDeleteExpired(ctx, now)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}
