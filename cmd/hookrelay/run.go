package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/keyring"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: hookrelay <command> [flags]

commands:
  serve     run the service (--roles api,dispatch,web,maintenance; all by default)
  migrate   create the database if missing and apply migrations
  bench     run the load benchmark: execs hookrelay-bench (see docs/benchmarks.md)
  token     print a new random admin token
  encryption-key
            print a new random encryption key (HOOKRELAY_ENCRYPTION_KEY)
  rotate-encryption-key
            re-encrypt every stored secret under HOOKRELAY_ENCRYPTION_KEY
            (the previous key in HOOKRELAY_ENCRYPTION_KEYS_OLD; --batch n)
  version   print the version

configuration comes from the environment; see README.md.
`

// errUsage marks a command line that could not be understood.
var errUsage = errors.New("usage")

// run is the whole program: main only wires the process to it, tests call it
// with their own args, environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout, stderr)
	case "bench":
		return runBench(rest, getenv)
	case "token":
		// A fresh admin token, for scripts that keep one (make run).
		fmt.Fprintln(stdout, hookrelay.NewKey(hookrelay.AdminTokenPrefix))
		return nil
	case "encryption-key":
		// A fresh encryption key, for scripts that keep one (make run).
		fmt.Fprintln(stdout, keyring.Generate())
		return nil
	case "rotate-encryption-key":
		return runRotateKey(ctx, rest, getenv, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "hookrelay %s (%s)\n", version, goVersion())
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}
