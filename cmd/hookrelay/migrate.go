package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ []string) error {
	cmd, _ := findCommand("migrate")
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := parseFlags(cmd, fs, args, stdout, stderr); err != nil {
		return err
	}
	cfg, logger, err := commandConfig(getenv, environ, stderr)
	if err != nil {
		return err
	}
	store, err := openDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	store.Close()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}
