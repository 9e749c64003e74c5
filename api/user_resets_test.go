package api_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// resetToken is the token of a reset link.
func resetToken(t *testing.T, out map[string]any) string {
	t.Helper()
	u, err := url.Parse(out["reset_url"].(string))
	require.NoError(t, err)
	require.Equal(t, ops.ResetPath, u.Path)
	return u.Query().Get("token")
}

// An owner issues a reset link for an active password user; a second link
// voids the first; others, and other users, are refused; issuing is in the
// audit log without the token.
func TestUserReset(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	ctx := t.Context()
	now := time.Now()
	mk := func(email, source string) string {
		u, err := b.DB.UserCreate(ctx, db.NewUser{Email: email, Role: access.Viewer, PasswordHash: access.HashPassword("old password 123"),
			AuthSource: source, Now: now})
		require.NoError(t, err)
		return strconv.FormatInt(u.ID, 10)
	}
	ada, lin, gone := mk("ada@example.com", db.AuthPassword), mk("lin@example.com", db.AuthSSO), mk("gone@example.com", db.AuthPassword)
	st, out := b.call(t, http.MethodPost, "/v1/users/"+gone+"/deactivate", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	_, owner := b.token(t, adminToken, map[string]any{"name": "owner", "role": "owner", "service": true})
	_, admin := b.token(t, adminToken, map[string]any{"name": "admin", "role": "admin", "service": true})

	st, out = b.call(t, http.MethodPost, "/v1/users/"+ada+"/reset", owner, nil)
	require.Equal(t, http.StatusCreated, st, "%v", out)
	first := resetToken(t, out)
	exp, err := time.Parse(time.RFC3339, out["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, now.Add(ops.InviteTTL), exp, time.Minute, "the invitations' time to live")
	u, err := b.DB.UserResetGet(ctx, ops.PortalTokenHash(first), time.Now())
	require.NoError(t, err)
	require.Equal(t, "ada@example.com", u.Email)
	_, err = b.DB.UserInviteGet(ctx, ops.PortalTokenHash(first), time.Now())
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "a reset link is no invitation")

	st, out = b.call(t, http.MethodPost, "/v1/users/"+ada+"/reset", adminToken, nil)
	require.Equal(t, http.StatusCreated, st, "%v", out)
	second := resetToken(t, out)
	_, err = b.DB.UserResetGet(ctx, ops.PortalTokenHash(first), time.Now())
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "a new link voids the earlier one")
	_, err = b.DB.UserResetGet(ctx, ops.PortalTokenHash(second), time.Now())
	require.NoError(t, err)

	for _, tc := range []struct {
		name, id, token string
		status          int
	}{
		{"not an owner", ada, admin, http.StatusForbidden},
		{"unknown user", "999999999", owner, http.StatusNotFound},
		{"single sign-on user", lin, owner, http.StatusConflict},
		{"deactivated user", gone, owner, http.StatusConflict},
	} {
		st, out := b.call(t, http.MethodPost, "/v1/users/"+tc.id+"/reset", tc.token, nil)
		require.Equal(t, tc.status, st, "%s: %v", tc.name, out)
	}
	_, err = b.DB.UserResetGet(ctx, ops.PortalTokenHash(second), time.Now())
	require.NoError(t, err, "a refused issue voids nothing")

	// An owner may issue a link for themself.
	me, err := b.DB.UserCreate(ctx, db.NewUser{Email: "owner@example.com", Role: access.Owner, PasswordHash: access.HashPassword("old password 123"),
		AuthSource: db.AuthPassword, Now: now})
	require.NoError(t, err)
	_, err = b.DB.APITokenCreate(ctx, db.NewAPIToken{TokenSHA256: hookrelay.HashKey("hrt_mine"), Prefix: "hrt_mine", Name: "mine",
		UserID: me.ID, Role: access.Owner, Now: now})
	require.NoError(t, err)
	st, out = b.call(t, http.MethodPost, "/v1/users/"+strconv.FormatInt(me.ID, 10)+"/reset", "hrt_mine", nil)
	require.Equal(t, http.StatusCreated, st, "%v", out)

	st, entries := b.exportLines(t, url.Values{"action": {"user.reset"}}, adminToken)
	require.Equal(t, http.StatusOK, st)
	var ok, refused []audit.JSONEntry
	for _, e := range entries {
		if e.Result == "ok" {
			ok = append(ok, e)
		} else {
			refused = append(refused, e)
		}
	}
	require.Len(t, ok, 3)
	require.Equal(t, ada, ok[0].TargetID)
	require.Contains(t, string(ok[0].After), "expires_at")
	require.NotContains(t, string(ok[0].After), first)
	require.Len(t, refused, 3, "the route's role check refuses the admin before the action")
}
