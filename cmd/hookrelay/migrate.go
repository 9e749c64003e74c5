package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	logger := newLogger(cfg, stderr)
	store, err := openDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	store.Close()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}
