package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/hookrelay/hookrelay/audit"
)

// resealBatch is how many rows one re-seal statement rewrites: small enough
// that each statement's transaction is short and locks a few rows briefly.
const resealBatch = 500

// runRotateKey re-seals every stored secret under HOOKRELAY_ENCRYPTION_KEY;
// rows sealed under a key of HOOKRELAY_ENCRYPTION_KEYS_OLD are opened with
// it. Opening the database runs the key check first, which stores the check
// value of the new key. It may run while the service runs: each batch is one short statement,
// and a row changed meanwhile is left to the change (already under the
// current key when the service has it).
func runRotateKey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ []string) error {
	cmd, _ := findCommand("rotate-encryption-key")
	fs := flag.NewFlagSet("rotate-encryption-key", flag.ContinueOnError)
	batch := fs.Int("batch", resealBatch, "rows per statement (1 to 10000)")
	if err := parseFlags(cmd, fs, args, stdout, stderr); err != nil {
		return err
	}
	if *batch < 1 || *batch > 10000 {
		return fmt.Errorf("%w: --batch must be between 1 and 10000", errUsage)
	}
	cfg, logger, err := commandConfig(getenv, environ, stderr)
	if err != nil {
		return err
	}
	store, err := openDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	n, err := store.Reseal(ctx, *batch)
	if aerr := cliAudit(store).Record(ctx, audit.Entry{Action: "encryption_key.rotate", TargetType: "settings",
		TargetID: "encryption_key", After: map[string]int64{"rows_resealed": n.Secrets + n.Endpoints + n.CarrierSecrets + n.OpsSecrets + n.Settings,
			"left_lost": n.Lost}}.Result(err)); err == nil && aerr != nil {
		err = aerr
	}
	if err != nil {
		return fmt.Errorf("rotate encryption key: %w", err)
	}
	fmt.Fprintf(stdout, "re-encrypted under the current key: %d endpoint signing secrets, %d endpoints' headers and credentials, %d carrier signing secrets, %d ops endpoint secrets, %d settings, %d users' TOTP secrets\n",
		n.Secrets, n.Endpoints, n.CarrierSecrets, n.OpsSecrets, n.Settings, n.Users)
	if n.Lost > 0 {
		fmt.Fprintf(stdout, "left as they are: %d values sealed under a key declared lost (%s)\n", n.Lost, lostKeyIDsVar)
	}
	return nil
}
