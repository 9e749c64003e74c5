package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/testenv"
)

// hookrelayBin is the product binary, built once by TestMain, that the
// benchmark's service processes run.
var hookrelayBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hookrelay-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hookrelay-bench tests:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	hookrelayBin, err = testenv.BuildHookrelay(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hookrelay-bench tests:", err)
		return 2
	}
	return m.Run()
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestFindHookrelay(t *testing.T) {
	t.Parallel()
	onPath := t.TempDir()
	noPath := func(string) string { return "" }

	got, err := findHookrelay("/opt/hookrelay", noPath)
	require.NoError(t, err)
	require.Equal(t, "/opt/hookrelay", got, "the -hookrelay flag wins")

	_, err = findHookrelay("", func(string) string { return onPath })
	require.ErrorContains(t, err, "-hookrelay PATH", "nothing beside the test binary, nothing on PATH")

	bin := filepath.Join(onPath, "hookrelay")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	got, err = findHookrelay("", func(k string) string {
		if k == "PATH" {
			return "/nonexistent" + string(filepath.ListSeparator) + onPath
		}
		return ""
	})
	require.NoError(t, err)
	require.Equal(t, bin, got)
}
