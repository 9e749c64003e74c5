package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchWithoutBenchBinary checks that `hookrelay bench` says how to get
// the benchmark when hookrelay-bench is neither beside the binary (the test
// binary's directory has none) nor on PATH.
func TestBenchWithoutBenchBinary(t *testing.T) {
	t.Parallel()
	emptyDir := t.TempDir()
	getenv := func(k string) string {
		if k == "PATH" {
			return emptyDir
		}
		return ""
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"hookrelay", "bench", "--phases", "max"}, getenv, &out, &errOut)
	require.ErrorContains(t, err, "hookrelay-bench not found")
	require.ErrorContains(t, err, "make bench")
}
