// Command hookrelay-bench is hookrelay's load benchmark (docs/benchmarks.md):
// it starts `hookrelay serve` processes (or drives a running service with
// --target), loads them with carrier callbacks, receives the deliveries in a
// loopback merchant sink and prints one JSON line per phase. `hookrelay
// bench ARGS` runs it too.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// errUsage marks a command line that could not be understood.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "hookrelay-bench: %v\n", err)
		os.Exit(1)
	}
}

// run is the whole program: main only wires the process to it, tests call it
// with their own args, environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runBench(ctx, args[1:], getenv, stdout, stderr)
}

// findHookrelay returns the hookrelay binary to start: the given path, else
// the one beside this executable (bin/hookrelay-bench next to bin/hookrelay),
// else the first on PATH.
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
