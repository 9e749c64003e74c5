package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/sso"
)

// TestSSOConfig: the HOOKRELAY_OIDC_* variables make the dashboard's
// sso.Config, and every bad one is named at start, never showing the
// client secret.
func TestSSOConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"HOOKRELAY_OIDC_ISSUER":        "https://idp.example.com/realms/ops",
		"HOOKRELAY_OIDC_CLIENT_ID":     "hookrelay",
		"HOOKRELAY_OIDC_CLIENT_SECRET": "s3cr3t-value-never-shown",
		"HOOKRELAY_OIDC_REDIRECT_URL":  "https://relay.example.com/ui/sso/callback",
		"HOOKRELAY_OIDC_ROLE_MAP":      "ops-owners=owner, ops-support=support",
	}
	load := func(edit map[string]string) (config, error) {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range edit {
			env[k] = v
		}
		return loadConfig(func(k string) string { return env[k] })
	}

	c, err := load(nil)
	require.NoError(t, err)
	// Unset, the scopes and the groups claim are left to package sso's
	// defaults.
	require.Equal(t, &sso.Config{
		Issuer:       "https://idp.example.com/realms/ops",
		ClientID:     "hookrelay",
		ClientSecret: "s3cr3t-value-never-shown",
		RedirectURL:  "https://relay.example.com/ui/sso/callback",
		RoleMap:      map[string]access.Role{"ops-owners": access.Owner, "ops-support": access.Support},
	}, c.Web.SSO)
	require.NoError(t, c.Web.SSO.Validate())

	c, err = load(map[string]string{
		"HOOKRELAY_OIDC_SCOPES":                 "openid,email",
		"HOOKRELAY_OIDC_ALLOWED_DOMAINS":        "example.com, example.org",
		"HOOKRELAY_OIDC_ALLOWED_GROUPS":         "ops",
		"HOOKRELAY_OIDC_GROUPS_CLAIM":           "roles",
		"HOOKRELAY_OIDC_ROLE_MAP":               "",
		"HOOKRELAY_OIDC_DEFAULT_ROLE":           "Viewer",
		"HOOKRELAY_OIDC_REQUIRE_VERIFIED_EMAIL": "false",
		"HOOKRELAY_OIDC_REDIRECT_URL":           "http://127.0.0.1:8080/ui/sso/callback",
	})
	require.NoError(t, err)
	require.Equal(t, []string{"openid", "email"}, c.Web.SSO.Scopes)
	require.Equal(t, []string{"example.com", "example.org"}, c.Web.SSO.AllowedDomains)
	require.Equal(t, []string{"ops"}, c.Web.SSO.AllowedGroups)
	require.Equal(t, "roles", c.Web.SSO.GroupsClaim)
	require.Equal(t, access.Viewer, c.Web.SSO.DefaultRole)
	require.Nil(t, c.Web.SSO.RoleMap)
	require.True(t, c.Web.SSO.AllowUnverifiedEmail)

	for _, tc := range []struct {
		name string
		edit map[string]string
		want []string
	}{
		{"bad role in the map", map[string]string{"HOOKRELAY_OIDC_ROLE_MAP": "ops-owners=root"},
			[]string{`HOOKRELAY_OIDC_ROLE_MAP="ops-owners=root"`, `unknown role "root"`}},
		{"map without role", map[string]string{"HOOKRELAY_OIDC_ROLE_MAP": "ops-owners"},
			[]string{"HOOKRELAY_OIDC_ROLE_MAP", "want GROUP=ROLE"}},
		{"bad default role", map[string]string{"HOOKRELAY_OIDC_DEFAULT_ROLE": "superuser"},
			[]string{`HOOKRELAY_OIDC_DEFAULT_ROLE="superuser"`, "want viewer, support, operator, admin or owner"}},
		{"no role at all", map[string]string{"HOOKRELAY_OIDC_ROLE_MAP": ""},
			[]string{"HOOKRELAY_OIDC_ROLE_MAP or HOOKRELAY_OIDC_DEFAULT_ROLE is required"}},
		{"http redirect outside loopback", map[string]string{"HOOKRELAY_OIDC_REDIRECT_URL": "http://relay.example.com/ui/sso/callback"},
			[]string{"HOOKRELAY_OIDC_REDIRECT_URL", "want https (http only on a loopback address)"}},
		{"redirect elsewhere", map[string]string{"HOOKRELAY_OIDC_REDIRECT_URL": "https://relay.example.com/callback"},
			[]string{"HOOKRELAY_OIDC_REDIRECT_URL", "want the dashboard's callback, https://HOST/ui/sso/callback"}},
		{"http issuer outside loopback", map[string]string{"HOOKRELAY_OIDC_ISSUER": "http://idp.example.com"},
			[]string{`HOOKRELAY_OIDC_ISSUER="http://idp.example.com"`, "want https"}},
		{"issuer with credentials", map[string]string{"HOOKRELAY_OIDC_ISSUER": "https://user:hunter2@idp.example.com"},
			[]string{"HOOKRELAY_OIDC_ISSUER", "want a URL without credentials or fragment"}},
		{"issuer not a URL", map[string]string{"HOOKRELAY_OIDC_ISSUER": "idp.example.com"},
			[]string{"HOOKRELAY_OIDC_ISSUER", "want an https URL"}},
		{"missing client", map[string]string{"HOOKRELAY_OIDC_CLIENT_ID": "", "HOOKRELAY_OIDC_CLIENT_SECRET": "", "HOOKRELAY_OIDC_REDIRECT_URL": ""},
			[]string{"HOOKRELAY_OIDC_CLIENT_ID is required", "HOOKRELAY_OIDC_CLIENT_SECRET is required", "HOOKRELAY_OIDC_REDIRECT_URL is required"}},
		{"settings without issuer", map[string]string{"HOOKRELAY_OIDC_ISSUER": ""},
			[]string{"HOOKRELAY_OIDC_CLIENT_ID is set without HOOKRELAY_OIDC_ISSUER", "HOOKRELAY_OIDC_CLIENT_SECRET is set without HOOKRELAY_OIDC_ISSUER"}},
		{"bad verified flag", map[string]string{"HOOKRELAY_OIDC_REQUIRE_VERIFIED_EMAIL": "maybe"},
			[]string{"HOOKRELAY_OIDC_REQUIRE_VERIFIED_EMAIL"}},
	} {
		_, err := load(tc.edit)
		require.Error(t, err, tc.name)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, tc.name)
		}
		require.NotContains(t, err.Error(), base["HOOKRELAY_OIDC_CLIENT_SECRET"], tc.name)
		require.NotContains(t, err.Error(), "hunter2", tc.name)
		require.True(t, strings.HasPrefix(err.Error(), "configuration:"), tc.name)
	}
}

// FuzzSSOConfig feeds arbitrary values to the single sign-on variables:
// loading never panics, never echoes the client secret, and a
// configuration it accepts is one package sso accepts.
func FuzzSSOConfig(f *testing.F) {
	f.Add("https://idp.example.com", "https://relay.example.com/ui/sso/callback", "ops=owner", "viewer", "secret")
	f.Add("http://10.0.0.1", "http://[::1]:8080/ui/sso/callback", "a=b=admin,c=viewer", "", "s")
	f.Add("https://u:p@idp", "https://relay/ui/sso/callback?x=1", "=,=", "root", "")
	f.Add("", "", "ops=owner", "", "secret")
	f.Fuzz(func(t *testing.T, issuer, redirect, roleMap, defRole, secret string) {
		env := map[string]string{
			"HOOKRELAY_OIDC_ISSUER":        issuer,
			"HOOKRELAY_OIDC_CLIENT_ID":     "hookrelay",
			"HOOKRELAY_OIDC_CLIENT_SECRET": secret,
			"HOOKRELAY_OIDC_REDIRECT_URL":  redirect,
			"HOOKRELAY_OIDC_ROLE_MAP":      roleMap,
			"HOOKRELAY_OIDC_DEFAULT_ROLE":  defRole,
		}
		c, err := loadConfig(func(k string) string { return env[k] })
		if err != nil {
			if strings.Contains(err.Error(), "HOOKRELAY_OIDC_CLIENT_SECRET=") {
				t.Fatalf("error echoes the client secret: %v", err)
			}
			return
		}
		if c.Web.SSO == nil {
			if strings.TrimSpace(issuer) != "" {
				t.Fatalf("issuer %q set, no single sign-on", issuer)
			}
			return
		}
		if err := c.Web.SSO.Validate(); err != nil {
			t.Fatalf("accepted a configuration package sso refuses: %v", err)
		}
		if _, err := sso.New(*c.Web.SSO); err != nil {
			t.Fatalf("accepted a configuration sso.New refuses: %v", err)
		}
	})
}
