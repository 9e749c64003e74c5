package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestMain lets the test binary be the relay child: runMeasure starts its
// own executable with the argument "relay".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "relay" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestRelaysEverything runs both relays for a second each and checks that
// the sink's ledger got every acknowledged callback exactly once, signed (a
// bad signature is answered 401 and would count as lost), and that the CPU
// figures were taken.
func TestRelaysEverything(t *testing.T) {
	for _, mode := range []string{"http", "pg"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"-mode", mode, "-duration", "1s", "-concurrency", "16", "-workers", "8", "-large-fraction", "0.2"}
			if mode == "pg" {
				args = append(args, "-database-url", dbtest.NewURL(t))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := runMeasure(ctx, args)
			if err != nil {
				t.Fatal(err)
			}
			if r.Callbacks == 0 || r.Delivered != r.Callbacks || r.Lost != 0 || r.Duplicates != 0 {
				t.Fatalf("callbacks %d, delivered %d, lost %d, duplicates %d", r.Callbacks, r.Delivered, r.Lost, r.Duplicates)
			}
			if r.RelayCPUms <= 0 || r.BenchCPUms <= 0 || (mode == "pg" && r.PostgresCPUms <= 0) {
				t.Fatalf("CPU not measured: %+v", r)
			}
		})
	}
}

func TestParseOptionsRejectsUnknownMode(t *testing.T) {
	if _, err := parseOptions([]string{"-mode", "kafka"}); err == nil {
		t.Fatal("mode kafka accepted")
	}
}
