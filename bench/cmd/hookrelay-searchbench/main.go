// Command hookrelay-searchbench measures message search on a large history
// (docs/benchmarks.md, "Search at 50 million messages"):
//
//	hookrelay-searchbench fill     create the database and fill it
//	hookrelay-searchbench measure  time the searches through a started API
//	hookrelay-searchbench all      both
//
// DATABASE_URL names the server (a private cluster: scripts/bench-search.sh).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "hookrelay-searchbench: %v\n", err)
		os.Exit(1)
	}
}
