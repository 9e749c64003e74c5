package floor

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/bench/load"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestMain lets the test binary be the relay child: runMeasure starts its
// own executable with the argument "relay".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "relay" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := Run(ctx, os.Args[1:], os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// TestRelaysEverything runs both relays for a second each and checks that
// the sink's ledger got every acknowledged callback exactly once, signed (a
// bad signature is answered 401 and would count as lost), and that the CPU
// figures were taken.
func TestRelaysEverything(t *testing.T) {
	for _, mode := range []string{"http", "pg", "pg-history"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"-mode", mode, "-duration", "1s", "-concurrency", "16", "-workers", "8", "-large-fraction", "0.2"}
			var url string
			if mode != "http" {
				url = dbtest.NewURL(t)
				args = append(args, "-database-url", url)
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
			if r.RelayCPUms <= 0 || r.BenchCPUms <= 0 || (mode != "http" && r.PostgresCPUms <= 0) {
				t.Fatalf("CPU not measured: %+v", r)
			}
			if _, err := load.CPUPressure(); (err == nil) != (r.CPUPressurePct != nil) {
				t.Fatalf("CPU pressure readable: %v, reported: %v", err == nil, r.CPUPressurePct)
			}
			if mode == "pg-history" {
				checkHistory(t, ctx, url, r.Callbacks)
			}
		})
	}
}

// TestDrainsABacklog stores a backlog with the relay's dispatch paused and
// checks that nothing was delivered before the resume, that the drain
// delivered every callback once, and that the claims honoured -batch and
// were timed.
func TestDrainsABacklog(t *testing.T) {
	const backlog, batch = 400, 5
	r := measure(t, "-mode", "pg-history", "-database-url", dbtest.NewURL(t),
		"-backlog", "400", "-batch", "5", "-concurrency", "16", "-workers", "8", "-large-fraction", "0.1")
	// The load generator may store a few more than asked (requests in
	// flight when the count is reached), never fewer.
	if r.Backlog < backlog || int64(r.Callbacks) != r.Backlog || r.Delivered != r.Callbacks || r.Lost != 0 || r.Duplicates != 0 {
		t.Fatalf("backlog %d, callbacks %d, delivered %d, lost %d, duplicates %d", r.Backlog, r.Callbacks, r.Delivered, r.Lost, r.Duplicates)
	}
	if r.FirstDeliverySec == nil || *r.FirstDeliverySec < 0 {
		t.Fatalf("first delivery %s s after the resume: delivered while paused", fmtSeconds(r.FirstDeliverySec))
	}
	c := r.Claim
	if c == nil || c.Claims < r.Callbacks/batch || c.MostRows != batch || c.P50ms <= 0 || c.P99ms < c.P50ms || c.MaxMs < c.P99ms {
		t.Fatalf("claims: %+v", c)
	}
	if c.Pings == 0 || c.PingP50ms <= 0 || c.PingP99ms < c.PingP50ms {
		t.Fatalf("SELECT 1 probes: %+v", c)
	}
	if r.DeliveredPerSec <= 0 || r.FillPerSec <= 0 {
		t.Fatalf("rates: fill %v/s, drain %v/s", r.FillPerSec, r.DeliveredPerSec)
	}
}

// TestDrainRateCapsTheClaims drains a backlog with -drain-rate and checks
// that the deliveries came at about that rate (uncapped, this relay drains
// at thousands a second).
func TestDrainRateCapsTheClaims(t *testing.T) {
	const rate = 300.0
	r := measure(t, "-mode", "pg", "-database-url", dbtest.NewURL(t),
		"-backlog", "300", "-batch", "10", "-drain-rate", "300", "-concurrency", "16", "-workers", "16")
	if r.Delivered != r.Callbacks || r.Lost != 0 {
		t.Fatalf("callbacks %d, delivered %d, lost %d", r.Callbacks, r.Delivered, r.Lost)
	}
	if r.DeliveredPerSec > 1.2*rate || r.DeliveredPerSec < 0.5*rate {
		t.Fatalf("drained at %.0f/s with -drain-rate %.0f", r.DeliveredPerSec, rate)
	}
}

func TestParseOptionsRejectsUnknownMode(t *testing.T) {
	if _, err := parseOptions([]string{"-mode", "kafka"}); err == nil {
		t.Fatal("mode kafka accepted")
	}
	if _, err := parseOptions([]string{"-mode", "http", "-backlog", "10"}); err == nil {
		t.Fatal("a backlog for the in-memory relay accepted")
	}
}

// checkHistory checks that the history relay kept a message row for every
// acknowledged callback and appended attempt rows.
func checkHistory(t *testing.T, ctx context.Context, url string, callbacks int) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var messages, attempts int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM floor_messages), (SELECT count(*) FROM floor_attempts)`).Scan(&messages, &attempts); err != nil {
		t.Fatal(err)
	}
	if messages < int64(callbacks) || attempts == 0 {
		t.Fatalf("history: %d messages, %d attempts for %d callbacks", messages, attempts, callbacks)
	}
}

// measure runs floor with args and fails the test if it fails.
func measure(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := runMeasure(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fmtSeconds(s *float64) string {
	if s == nil {
		return "(none)"
	}
	return strconv.FormatFloat(*s, 'f', 3, 64)
}
