package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVarMeanings: the help's meanings and the parser's variables are the
// same list, each variable once.
func TestVarMeanings(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, v := range knownVars() {
		require.False(t, seen[v.Name], "%s read twice with different notes", v.Name)
		seen[v.Name] = true
		require.NotEmpty(t, varMeanings[v.Name], "%s has no meaning in varMeanings", v.Name)
		require.NotEmpty(t, v.Default, v.Name)
	}
	for name := range varMeanings {
		require.True(t, seen[name], "varMeanings has %s, which the configuration does not read", name)
	}
	require.True(t, seen["HOOKRELAY_ROLES"])
	require.True(t, seen["HOOKRELAY_ENCRYPTION_KEY"])
	require.True(t, seen["HOOKRELAY_PORTAL_FRAME_ANCESTORS"])
}

// TestUnknownVars: HOOKRELAY_ variables no setting reads are found, with
// the one probably meant (edit distance up to 2, else a prefix or suffix
// match); known ones, other prefixes and the tooling's are left alone.
func TestUnknownVars(t *testing.T) {
	t.Parallel()
	environ := []string{
		"PATH=/usr/bin",
		"HOOKRELAY_LEASE=30s",
		"HOOKRELAY_LEASES=10s",
		"HOOKRELAY_ALLOW_PRIVATE_TARGET=true",
		"HOOKRELAY_CACHE_TTL=1s",
		"HOOKRELAY_COMPLETELY_DIFFERENT=1",
		"HOOKRELAY_URL=http://127.0.0.1:8080",
		"HOOKRELAY_TEST_DATABASE_URL=postgres://x/y",
		"HOOKRELAY_IMAGE=hookrelay:compose",
		"HOOKRELAY_LEASES=again",
	}
	require.Equal(t, []unknownVar{
		{Name: "HOOKRELAY_ALLOW_PRIVATE_TARGET", Suggest: "HOOKRELAY_ALLOW_PRIVATE_TARGETS"},
		{Name: "HOOKRELAY_CACHE_TTL", Suggest: "HOOKRELAY_INGEST_CACHE_TTL"},
		{Name: "HOOKRELAY_COMPLETELY_DIFFERENT"},
		{Name: "HOOKRELAY_LEASES", Suggest: "HOOKRELAY_LEASE"},
	}, unknownVars(environ, knownVars()))
	require.Equal(t, 0, editDistance("abc", "abc"))
	require.Equal(t, 2, editDistance("HOOKRELAY_QUEUE", "HOOKRELAY_QUEUES_"))
}

// TestServeWarnsOfUnknownVars: serve starts with a misspelt variable in its
// environment and logs a warning naming it and the one probably meant.
func TestServeWarnsOfUnknownVars(t *testing.T) {
	t.Parallel()
	s := startServe(t, map[string]string{"HOOKRELAY_LEASES": "10s"})
	require.Contains(t, s.Logs.String(), `"level":"WARN","msg":"unknown variable HOOKRELAY_LEASES ignored; did you mean HOOKRELAY_LEASE?"`)
	require.Contains(t, s.Logs.String(), `"did_you_mean":"HOOKRELAY_LEASE"`)
}

// TestConfigErrorsInOneMessage: every bad variable, a bad HOOKRELAY_ROLES
// and a missing encryption key included, is in one message with one
// prefix.
func TestConfigErrorsInOneMessage(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOKRELAY_ROLES": "api,bogus", "HOOKRELAY_LEASE": "soon", "HOOKRELAY_QUEUES": "0"}
	for _, cmd := range []string{"serve", "migrate", "rotate-encryption-key"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"hookrelay", cmd}, func(k string) string { return env[k] }, &out, &errOut)
		require.Error(t, err, cmd)
		msg := err.Error()
		require.True(t, strings.HasPrefix(msg, "configuration: "), "%s: %s", cmd, msg)
		require.Equal(t, 1, strings.Count(msg, "configuration:"), "%s: %s", cmd, msg)
		require.NotContains(t, msg, "invalid:", cmd)
		for _, want := range []string{"HOOKRELAY_ROLES", "bogus", "HOOKRELAY_LEASE", "HOOKRELAY_QUEUES", "HOOKRELAY_ENCRYPTION_KEY is required"} {
			require.Contains(t, msg, want, cmd)
		}
	}
	// A misspelt variable, likely the cause, is named in the refusal.
	err := run(context.Background(), []string{"hookrelay", "migrate"}, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{},
		"HOOKRELAY_ENCRYPTION_KEYS=x")
	require.ErrorContains(t, err, "HOOKRELAY_ENCRYPTION_KEY is required")
	require.ErrorContains(t, err, "(unknown variable HOOKRELAY_ENCRYPTION_KEYS ignored; did you mean HOOKRELAY_ENCRYPTION_KEY?)")
	require.Equal(t, "1h", shortDuration(time.Hour))
	require.Equal(t, "1h30m", shortDuration(90*time.Minute))
	require.Equal(t, "1m", shortDuration(time.Minute))
	require.Equal(t, "1.5s", shortDuration(1500*time.Millisecond))
	// The missing key alone has the same prefix.
	err = run(context.Background(), []string{"hookrelay", "migrate"}, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
	require.EqualError(t, err, "configuration: "+errKeyRequired.Error())
}
