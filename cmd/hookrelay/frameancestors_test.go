package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigPortalFrameAncestors: the origins allowed to frame the portal
// are origins or 'self'; anything that could widen or break the CSP is
// refused before the database is opened.
func TestConfigPortalFrameAncestors(t *testing.T) {
	t.Parallel()
	load := func(v string) (config, error) {
		return loadConfig(func(k string) string {
			if k == "HOOKRELAY_PORTAL_FRAME_ANCESTORS" {
				return v
			}
			return ""
		})
	}
	for v, want := range map[string][]string{
		"":       nil,
		"'none'": nil,
		"https://console.example.com http://127.0.0.1:3000": {"https://console.example.com", "http://127.0.0.1:3000"},
		"https://*.example.com/, 'self'":                    {"https://*.example.com", "'self'"},
	} {
		c, err := load(v)
		require.NoError(t, err, v)
		require.Equal(t, want, c.Web.PortalFrameAncestors, v)
	}
	for _, bad := range []string{
		"*", "https://*", "console.example.com", "ftp://example.com", "https://example.com/portal",
		"https://example.com;script-src *", "https://user@example.com", "https://example.com?x=1",
		"'unsafe-inline'", "data:",
	} {
		_, err := load(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "HOOKRELAY_PORTAL_FRAME_ANCESTORS", bad)
	}
}
