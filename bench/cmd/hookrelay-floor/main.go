// Command hookrelay-floor runs the bare reference relay of package floor and prints
// the least CPU per callback a relay on hookrelay's stack costs on this
// machine (docs/benchmarks.md).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookrelay/hookrelay/bench/floor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := floor.Run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hookrelay-floor:", err)
		os.Exit(1)
	}
}
