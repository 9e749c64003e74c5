// Command hookrelay is the webhook dispatch platform: one binary, several
// roles (api, dispatch, web, maintenance), any number of processes against one
// PostgreSQL database.
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
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "hookrelay: %v\n", err)
		os.Exit(1)
	}
}
