package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpExitsZero: every command's -h and --help, `hookrelay help
// <command>`, `hookrelay help`, --help and -h print the usage to stdout and
// succeed; the commands that read the configuration list its variables,
// from the parser's own list, with their defaults; the flags are listed.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	emptyDir := t.TempDir()
	getenv := func(k string) string {
		if k == "PATH" {
			return emptyDir // no hookrelay-bench: bench answers itself
		}
		return ""
	}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--help"}, []string{"usage: hookrelay serve", "-roles", "HOOKRELAY_LEASE\n", "default: 30s", "HOOKRELAY_ROLES", "DATABASE_URL"}},
		{[]string{"serve", "-h"}, []string{"usage: hookrelay serve", "-roles"}},
		{[]string{"migrate", "--help"}, []string{"usage: hookrelay migrate", "HOOKRELAY_ENCRYPTION_KEY", "default: postgres://"}},
		{[]string{"migrate", "-h"}, []string{"usage: hookrelay migrate"}},
		{[]string{"rotate-encryption-key", "--help"}, []string{"usage: hookrelay rotate-encryption-key", "-batch", "HOOKRELAY_ENCRYPTION_KEYS_OLD"}},
		{[]string{"token", "--help"}, []string{"usage: hookrelay token", "reads no environment variable"}},
		{[]string{"encryption-key", "-h"}, []string{"usage: hookrelay encryption-key"}},
		{[]string{"version", "--help"}, []string{"usage: hookrelay version"}},
		{[]string{"bench", "--help"}, []string{"usage: hookrelay bench", "hookrelay-bench not found"}},
		{[]string{"help"}, []string{"usage: hookrelay <command>", "rotate-encryption-key", "HOOKRELAY_ALLOW_PRIVATE_TARGETS"}},
		{[]string{"--help"}, []string{"usage: hookrelay <command>"}},
		{[]string{"-h"}, []string{"usage: hookrelay <command>"}},
		{[]string{"help", "serve"}, []string{"usage: hookrelay serve", "-roles"}},
		{[]string{"help", "help"}, []string{"usage: hookrelay <command>"}},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"hookrelay"}, tc.args...), getenv, &out, &errOut)
		require.NoError(t, err, "%v", tc.args)
		require.Empty(t, errOut.String(), "%v", tc.args)
		for _, w := range tc.want {
			require.Contains(t, out.String(), w, "%v", tc.args)
		}
		require.NotContains(t, out.String(), "flag: help requested", "%v", tc.args)
		require.NotContains(t, out.String(), "hra_", "%v: help prints no token", tc.args)
	}
}

// TestHelpListsEveryVariable: the help of serve lists every variable the
// parser reads, each with its meaning.
func TestHelpListsEveryVariable(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"hookrelay", "serve", "--help"}, func(string) string { return "" }, &out, &out))
	for _, v := range knownVars() {
		require.Contains(t, out.String(), "  "+v.Name+"\n        "+varMeanings[v.Name]+"\n")
	}
}

// TestBadFlagIsUsageError: an unknown flag is still a usage error, with the
// command's help on stderr.
func TestBadFlagIsUsageError(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"hookrelay", "migrate", "--nope"}, func(string) string { return "" }, &out, &errOut)
	require.ErrorIs(t, err, errUsage)
	require.True(t, strings.HasPrefix(errOut.String(), "usage: hookrelay migrate"), errOut.String())
	require.Empty(t, out.String())
}
