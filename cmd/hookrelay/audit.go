package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// auditVerifyCommand is `hookrelay audit verify`, as its help shows it.
var auditVerifyCommand = command{name: "audit verify",
	summary: "check the audit log's hash chain from its anchor to its head; exit status 1 names the first entry edited or deleted", readsConfig: true}

// runAudit runs `hookrelay audit <subcommand>`.
func runAudit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ []string) error {
	if len(args) == 0 || wantsHelp(args) {
		w := stdout
		if len(args) == 0 {
			w = stderr
		}
		fmt.Fprint(w, "usage: hookrelay audit verify [--print-head]\n\n"+auditVerifyCommand.summary+".\n")
		if len(args) == 0 {
			return fmt.Errorf("%w: audit needs a subcommand (verify)", errUsage)
		}
		return nil
	}
	switch args[0] {
	case "verify":
		return runAuditVerify(ctx, args[1:], getenv, stdout, stderr, environ)
	}
	return fmt.Errorf("%w: unknown audit subcommand %q (want verify)", errUsage, args[0])
}

// runAuditVerify verifies the audit log (audit.Verify) and prints how many
// entries it checked, and with --print-head the head to keep elsewhere: a
// later head that does not continue it reveals a rewritten log. A broken
// chain is an error naming the first broken entry (exit status 1).
func runAuditVerify(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ []string) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	printHead := fs.Bool("print-head", false, "also print the head (newest id, time and hash), to keep outside the database")
	if err := parseFlags(auditVerifyCommand, fs, args, stdout, stderr); err != nil {
		return err
	}
	cfg, _, err := commandConfig(getenv, environ, stderr)
	if err != nil {
		return err
	}
	// Read only: no migration, no key (the log holds no sealed value).
	store, err := db.Open(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer store.Close()
	rep, err := audit.Verify(ctx, store)
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	if !rep.OK() {
		fmt.Fprintf(stdout, "audit log broken at entry %d: %s\n%d entries verified before it\n", rep.BrokenID, rep.Problem, rep.Count)
		return fmt.Errorf("audit log broken at entry %d: %s", rep.BrokenID, rep.Problem)
	}
	fmt.Fprintf(stdout, "audit log intact: %d entries verified", rep.Count)
	if rep.Count > 0 {
		fmt.Fprintf(stdout, " (ids %d to %d)", rep.Head.AnchorID+1, rep.Head.LastID)
	}
	fmt.Fprintln(stdout)
	if *printHead {
		fmt.Fprintf(stdout, "head: id=%d at=%s hash=%x\n", rep.Head.LastID, rep.Head.LastAt.UTC().Format("2006-01-02T15:04:05.000000Z"), rep.Head.Hash)
	}
	return nil
}

// cliAudit is the audit log of a command's changes, made as the service
// itself on the command line (actor "cli").
func cliAudit(store *db.DB) *audit.Log {
	return audit.New(store, audit.Config{SystemName: "cli"})
}
