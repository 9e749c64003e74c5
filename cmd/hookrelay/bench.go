package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// benchBinary is the load benchmark's own binary: it lives in the bench
// module so that the product carries none of the measuring tools.
const benchBinary = "hookrelay-bench"

// runBench is `hookrelay bench ARGS`: it replaces this process with
// hookrelay-bench ARGS, found beside this executable or else on PATH.
// Without hookrelay-bench, --help says what the command is; with it,
// hookrelay-bench answers with its flags.
func runBench(args []string, getenv func(string) string, stdout io.Writer) error {
	path, err := findBench(getenv)
	if err != nil && wantsHelp(args) {
		cmd, _ := findCommand("bench")
		writeCommandHelp(stdout, cmd, nil)
		fmt.Fprintf(stdout, "\n%v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	return syscall.Exec(path, append([]string{path}, args...), os.Environ())
}

// findBench looks for hookrelay-bench beside this executable (make bench
// builds both into bin/), then in each directory of PATH.
func findBench(getenv func(string) string) (string, error) {
	var dirs []string
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	dirs = append(dirs, filepath.SplitList(getenv("PATH"))...)
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, benchBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found beside this executable or on PATH: the benchmark is a separate binary; "+
		"build it with `make bench` (or `go build -o bin/%s ./cmd/%s` in bench/) and put it beside hookrelay", benchBinary, benchBinary, benchBinary)
}
