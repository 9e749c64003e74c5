package sso

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
)

func TestParseRoleMap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want map[string]access.Role
		err  string
	}{
		{"", nil, ""},
		{" ops-owners=owner , ops-support = Support,", map[string]access.Role{"ops-owners": access.Owner, "ops-support": access.Support}, ""},
		{"/hookrelay/admins=admin", map[string]access.Role{"/hookrelay/admins": access.Admin}, ""},
		{"a=b=viewer", map[string]access.Role{"a=b": access.Viewer}, ""},
		{"ops-owners", nil, `"ops-owners": want GROUP=ROLE`},
		{"=owner", nil, `"=owner": want GROUP=ROLE`},
		{"ops=superuser", nil, `unknown role "superuser"`},
		{"ops=owner,ops=viewer", nil, `group "ops" is mapped twice`},
	} {
		got, err := ParseRoleMap(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Config{Issuer: "https://idp.example.com", ClientID: "c", ClientSecret: "s", RedirectURL: "https://relay.example.com/ui/sso/callback"}
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		edit func(*Config)
		err  string
	}{
		{func(c *Config) { c.Issuer = "" }, "issuer: required"},
		{func(c *Config) { c.Issuer = "http://idp.example.com" }, "issuer: want https (http only on a loopback address)"},
		{func(c *Config) { c.Issuer = "http://127.0.0.1:5556/dex" }, ""},
		{func(c *Config) { c.Issuer = "http://[::1]:5556" }, ""},
		{func(c *Config) { c.Issuer = "idp.example.com" }, "issuer: want an absolute https URL"},
		{func(c *Config) { c.ClientID = "" }, "client ID: required"},
		{func(c *Config) { c.ClientSecret = "" }, "client secret: required"},
		{func(c *Config) { c.RedirectURL = "http://relay.example.com/ui/sso/callback" }, "redirect URL: want https (http only on a loopback address)"},
		{func(c *Config) { c.RedirectURL = "http://localhost:8080/ui/sso/callback" }, ""},
		{func(c *Config) { c.RoleMap = map[string]access.Role{"g": access.RoleNone} }, `role map: group "g"`},
	} {
		c := ok
		tc.edit(&c)
		if tc.err == "" {
			require.NoError(t, c.Validate())
		} else {
			require.ErrorContains(t, c.Validate(), tc.err)
		}
	}
}

// TestAdmit: the claims providers send in their various shapes (groups as
// one string, email_verified as a string) and the role mapping.
func TestAdmit(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Issuer: "https://idp.example.com", ClientID: "c", ClientSecret: "s", RedirectURL: "https://relay.example.com/ui/sso/callback",
		GroupsClaim: "roles",
		RoleMap:     map[string]access.Role{"viewers": access.Viewer, "operators": access.Operator, "admins": access.Admin}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		claims map[string]any
		role   access.Role
		code   hookrelay.ErrorCode
	}{
		{"strongest wins", map[string]any{"email": "a@x.io", "email_verified": true, "roles": []any{"viewers", "admins", "operators"}}, access.Admin, ""},
		{"one string", map[string]any{"email": "a@x.io", "email_verified": "true", "roles": "operators"}, access.Operator, ""},
		{"groups claim name", map[string]any{"email": "a@x.io", "email_verified": true, "groups": []any{"admins"}}, access.RoleNone, hookrelay.EFORBIDDEN},
		{"verified false string", map[string]any{"email": "a@x.io", "email_verified": "false", "roles": "admins"}, access.Admin, hookrelay.EFORBIDDEN},
		{"no email", map[string]any{"email_verified": true, "roles": "admins"}, access.Admin, hookrelay.EFORBIDDEN},
	} {
		id, err := c.admit("https://idp.example.com", "s1", tc.claims)
		require.Equal(t, tc.code, hookrelay.CodeOf(err), tc.name)
		if tc.code == "" {
			require.Equal(t, tc.role, id.Role, tc.name)
		}
	}
}

// TestFlowSeal: a sealed flow opens under its key until it expires, and
// not under another key or once altered.
func TestFlowSeal(t *testing.T) {
	t.Parallel()
	a, err := newAEAD("secret-a")
	require.NoError(t, err)
	b, err := newAEAD("secret-b")
	require.NoError(t, err)
	now := time.Now()
	f := flow{State: "s", Nonce: "n", Verifier: "v", ReturnTo: "/ui/", Expires: now.Add(time.Minute)}
	v, err := seal(a, f)
	require.NoError(t, err)
	got, err := open(a, v, now)
	require.NoError(t, err)
	require.Equal(t, f.State, got.State)
	require.Equal(t, f.ReturnTo, got.ReturnTo)
	_, err = open(a, v, now.Add(time.Minute))
	require.ErrorIs(t, err, errBadFlow, "expired")
	_, err = open(b, v, now)
	require.ErrorIs(t, err, errBadFlow, "another key")
	_, err = open(a, v[:len(v)-2]+"AA", now)
	require.ErrorIs(t, err, errBadFlow, "altered")
}
