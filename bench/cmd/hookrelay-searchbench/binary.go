package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// findHookrelay returns the hookrelay binary to start: the given path, else
// the one beside this executable, else the first on PATH.
func findHookrelay(given string, getenv func(string) string) (string, error) {
	if given != "" {
		return given, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "hookrelay")
		if isExecutable(beside) {
			return beside, nil
		}
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if p := filepath.Join(dir, "hookrelay"); dir != "" && isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no hookrelay binary beside this executable or on PATH: build it (make build) or pass -hookrelay PATH")
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
