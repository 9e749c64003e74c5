package dispatch

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// childEnv switches the test binary into a dispatcher child process (for
// the kill -9 test): it runs a Dispatcher on the database named by the
// variable until it is killed.
const childEnv = "HOOKRELAY_TEST_DISPATCH_CHILD_DB"

// childUserAgent marks the child's requests so sinks can tell them apart.
const childUserAgent = "hookrelay/child"

func TestMain(m *testing.M) {
	if url := os.Getenv(childEnv); url != "" {
		os.Exit(runChild(url))
	}
	goleak.VerifyTestMain(m)
}

func runChild(url string) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	store, err := db.Open(ctx, db.Config{URL: url, MaxConns: 8, Keys: dbtest.Keys()})
	if err != nil {
		logger.Error("child: open", "error", err)
		return 1
	}
	defer store.Close()
	cfg := testConfig()
	cfg.Lease = 2 * time.Second
	cfg.UserAgent = childUserAgent
	if err := New(logger, cfg, store, nil, nil).Run(ctx); err != nil {
		logger.Error("child: run", "error", err)
		return 1
	}
	return 0
}
