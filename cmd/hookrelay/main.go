// Command hookrelay is the webhook dispatch platform: one binary, several
// roles (api, dispatch, web, maintenance), any number of processes against one
// PostgreSQL database.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// defaultGCPercent replaces the runtime's GOGC of 100 when GOGC is not set.
// The service's live heap is small (tens of MB) and churns fast (request
// bodies, pgx rows, HTTP deliveries); at 100 the collector ran ~8 % of each
// process's CPU at full load. 400 cut the service's CPU per callback by 8 %
// (0.220 → 0.203 ms, `hookrelay bench` max-rate, docs/benchmarks.md) for a
// peak heap a few times larger. GOGC and GOMEMLIMIT in the environment win.
const defaultGCPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr, os.Environ()...); err != nil {
		fmt.Fprintf(os.Stderr, "hookrelay: %v\n", err)
		os.Exit(1)
	}
}
