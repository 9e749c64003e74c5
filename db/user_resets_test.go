package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// A reset link is no invitation and an invitation no reset link; a user
// deactivated after the link was made is refused and the link stays
// unused; the TOTP secret set by a reset is sealed like any other; the
// expired links go with the invitations' retention.
func TestUserResetAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{})
	now := time.Now()
	u, err := store.UserCreate(ctx, db.NewUser{Email: "ops@example.com", Role: access.Operator, AuthSource: db.AuthPassword,
		PasswordHash: access.HashPassword("a long enough password"), Now: now})
	require.NoError(t, err)
	reset, invite := hookrelay.HashKey("reset"), hookrelay.HashKey("invite")
	require.NoError(t, store.UserResetCreate(ctx, db.NewUserReset{TokenSHA256: reset, User: u, Now: now, ExpiresAt: now.Add(time.Hour)}))
	_, err = store.UserInviteCreate(ctx, db.NewUserInvite{TokenSHA256: invite, Email: "new@example.com", Role: access.Viewer,
		Now: now, ExpiresAt: now.Add(time.Hour)})
	require.NoError(t, err)

	_, err = store.UserInviteGet(ctx, reset, now)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	_, err = store.UserInviteAccept(ctx, reset, db.NewUser{PasswordHash: "x", AuthSource: db.AuthPassword, Now: now})
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	_, err = store.UserResetGet(ctx, invite, now)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	_, err = store.UserResetAccept(ctx, invite, db.UserCredentials{PasswordHash: "x", Now: now})
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	_, err = store.UserDeactivate(ctx, u.ID, now)
	require.NoError(t, err)
	_, err = store.UserResetAccept(ctx, reset, db.UserCredentials{PasswordHash: "x", Now: now})
	require.Equal(t, hookrelay.ECONFLICT, hookrelay.CodeOf(err))
	_, err = store.UserReactivate(ctx, u.ID)
	require.NoError(t, err)
	secret := access.NewTOTPSecret()
	got, err := store.UserResetAccept(ctx, reset, db.UserCredentials{PasswordHash: access.HashPassword("another long password"),
		TOTPSecret: secret, TOTPStep: 7, Now: now})
	require.NoError(t, err, "the refused accept left the link unused")
	require.Equal(t, secret, got.TOTPSecret)
	again, err := store.UserGet(ctx, u.ID)
	require.NoError(t, err)
	require.Equal(t, secret, again.TOTPSecret, "opened from its sealed form")
	require.True(t, access.CheckPassword(again.PasswordHash, "another long password"))
	first, err := store.UserTOTPUse(ctx, u.ID, 7)
	require.NoError(t, err)
	require.False(t, first, "the enrolment's step is used")

	require.NoError(t, store.UserResetCreate(ctx, db.NewUserReset{TokenSHA256: hookrelay.HashKey("old"), User: u, Now: now, ExpiresAt: now.Add(time.Minute)}))
	n, err := store.UserInvitesDeleteExpired(ctx, now.Add(2*time.Minute))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the expired link; the others run an hour")
}
