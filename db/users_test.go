package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/keyring"
)

// A user's TOTP secret is stored sealed; emails are unique whatever their
// case; deactivation revokes the user's tokens in the same transaction.
func TestUsersAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	secret := access.NewTOTPSecret()
	u, err := store.UserCreate(ctx, db.NewUser{Email: "Ops@Example.com", Role: access.Operator, TOTPSecret: secret,
		AuthSource: db.AuthPassword, PasswordHash: access.HashPassword("a long enough password"), Now: time.Now()})
	require.NoError(t, err)
	got, err := store.UserByEmail(ctx, "ops@example.COM")
	require.NoError(t, err)
	require.Equal(t, u.ID, got.ID)
	require.Equal(t, secret, got.TOTPSecret)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var stored string
	require.NoError(t, conn.QueryRow(ctx, "SELECT totp_secret FROM users WHERE id = $1", u.ID).Scan(&stored))
	require.True(t, keyring.IsSealed(stored))
	require.NotContains(t, stored, secret)

	_, err = store.UserCreate(ctx, db.NewUser{Email: "OPS@example.com", Role: access.Viewer, AuthSource: db.AuthSSO, Now: time.Now()})
	require.Equal(t, hookrelay.ECONFLICT, hookrelay.CodeOf(err))

	tok, err := store.APITokenCreate(ctx, db.NewAPIToken{TokenSHA256: hookrelay.HashKey("hrt_x"), Prefix: "hrt_x", Name: "t",
		UserID: u.ID, Role: access.Admin, Now: time.Now()})
	require.NoError(t, err)
	auth, err := store.APITokenAuth(ctx, hookrelay.HashKey("hrt_x"), time.Now())
	require.NoError(t, err)
	require.Equal(t, access.Operator, auth.Role, "a user's token acts with no more than its user's role")
	_, err = store.UserDeactivate(ctx, u.ID, time.Now())
	require.NoError(t, err)
	_, err = store.APITokenAuth(ctx, hookrelay.HashKey("hrt_x"), time.Now())
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	_, err = store.UserReactivate(ctx, u.ID)
	require.NoError(t, err)
	_, err = store.APITokenAuth(ctx, hookrelay.HashKey("hrt_x"), time.Now())
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "revoked with the deactivation: %d", tok.ID)

	n, err := store.Reseal(ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n.Users, "sealed under the current key already")
}
