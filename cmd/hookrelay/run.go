package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/keyring"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// errUsage marks a command line that could not be understood.
var errUsage = errors.New("usage")

// run is the whole program: main only wires the process to it, tests call it
// with their own args, environment and output. environ is the environment's
// NAME=value entries, for the warning about unknown HOOKRELAY_ variables
// (getenv reads the values; a test checking no such warning passes none).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ ...string) error {
	err := runCommand(ctx, args, getenv, stdout, stderr, environ)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the help asked for is written
	}
	return err
}

// runCommand runs the command args names; a help asked for is
// flag.ErrHelp, which run turns into success.
func runCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ []string) error {
	if len(args) < 2 {
		writeUsage(stderr, false)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	name, rest := args[1], args[2:]
	switch name {
	case "token", "encryption-key", "version":
		// The commands with flags answer -h in parseFlags.
		if wantsHelp(rest) {
			cmd, _ := findCommand(name)
			writeCommandHelp(stdout, cmd, nil)
			return nil
		}
	}
	switch name {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr, environ)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout, stderr, environ)
	case "listen":
		return runListen(ctx, rest, getenv, stdout, stderr)
	case "bench":
		return runBench(rest, getenv, stdout)
	case "token":
		// A fresh admin token, for scripts that keep one (make run).
		fmt.Fprintln(stdout, hookrelay.NewKey(hookrelay.AdminTokenPrefix))
		return nil
	case "encryption-key":
		// A fresh encryption key, for scripts that keep one (make run).
		fmt.Fprintln(stdout, keyring.Generate())
		return nil
	case "rotate-encryption-key":
		return runRotateKey(ctx, rest, getenv, stdout, stderr, environ)
	case "audit":
		return runAudit(ctx, rest, getenv, stdout, stderr, environ)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "hookrelay %s (%s)\n", version, goVersion())
		return nil
	case "help", "--help", "-h", "-help":
		if len(rest) > 0 && !wantsHelp(rest) && rest[0] != "help" {
			// hookrelay help <command> is <command> --help.
			return runCommand(ctx, []string{args[0], rest[0], "--help"}, getenv, stdout, stderr, environ)
		}
		writeUsage(stdout, true)
		return nil
	default:
		writeUsage(stderr, false)
		return fmt.Errorf("%w: unknown command %q (want one of %s)", errUsage, name, commandNames())
	}
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}
