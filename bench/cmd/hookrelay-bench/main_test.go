package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
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
	hookrelayBin = filepath.Join(dir, "hookrelay")
	if err := buildHookrelay(hookrelayBin); err != nil {
		fmt.Fprintln(os.Stderr, "hookrelay-bench tests:", err)
		return 2
	}
	return m.Run()
}

// buildHookrelay builds the product binary from the product module's own
// directory, so that its dependencies come from the product's go.mod rather
// than from this module's.
func buildHookrelay(out string) error {
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hookrelay/hookrelay")
	list.Stderr = os.Stderr
	dir, err := list.Output()
	if err != nil {
		return fmt.Errorf("locate the hookrelay module: %w", err)
	}
	build := exec.Command("go", "build", "-o", out, "./cmd/hookrelay")
	build.Dir = strings.TrimSpace(string(dir))
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/hookrelay: %w", err)
	}
	return nil
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
