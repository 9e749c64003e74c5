package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleDir returns the directory of the hookrelay module as the go command
// resolves it from the current one (the bench and e2e modules replace it
// with their parent directory).
func ModuleDir() (string, error) {
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hookrelay/hookrelay")
	list.Stderr = os.Stderr
	out, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("testenv: locate the hookrelay module: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// BuildHookrelay builds the hookrelay binary into dir and returns its
// path. It builds in the hookrelay module's own directory, so that the
// dependencies come from that module's go.mod rather than from the
// caller's. Tests that start processes call it once, from TestMain.
func BuildHookrelay(dir string) (string, error) {
	mod, err := ModuleDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hookrelay")
	build := exec.Command("go", "build", "-o", bin, "./cmd/hookrelay")
	build.Dir = mod
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("testenv: go build ./cmd/hookrelay: %w", err)
	}
	return bin, nil
}
