// Package floor measures the least CPU per callback that a relay built on
// hookrelay's fixed stack (echo, pgx, go-retryablehttp, the embedded S3
// store) costs on the machine it runs on. It is a measuring instrument for
// docs/benchmarks.md, not a product: it answers "could any relay on this
// stack meet the CPU target of docs/benchmarks.md here?".
//
// The relay runs in a child process (its CPU is measured alone: the
// hookrelay-floor command execs itself with the argument "relay") and does
// only the work every callback needs:
//
//   - mode pg: accept the POST (echo), put a body over 8 KB in the embedded
//     S3 store, insert the row with a group commit and answer 202 after the
//     commit; claim leased batches with FOR UPDATE SKIP LOCKED, read a large
//     body back from the store, sign and POST it (go-retryablehttp), delete
//     the delivered rows in batches. At least once, durable before the 202,
//     no transaction across network I/O.
//   - mode pg-history: mode pg plus the history hookrelay keeps of every
//     callback: the body in a day-partitioned message table (the queue row
//     refers to it) and an attempt row, day-partitioned, per delivery.
//   - mode http: the same HTTP work with an in-memory queue between the two
//     sides: no durability at all, the HTTP floor alone.
//
// Left out on purpose (each only adds CPU): authentication, routing to
// merchants, per-key ordering, message and attempt history (but see
// pg-history), retries, metrics, logs. The load generator and the sink are
// hookrelay-bench's own (bench/load: 1.2 KB callbacks, 5 % of 30 KB, 10,000
// keys, a key's next callback after the previous one's 202), in the parent
// process. From the bench module's directory:
//
//	go run ./cmd/hookrelay-floor -mode pg -duration 30s
//	go run ./cmd/hookrelay-floor -mode http -duration 30s
//
// With -backlog N it measures a drain instead, as hookrelay-bench's
// backlog-drain phase does: N callbacks are stored with the relay's
// dispatch paused, then it drains them, claiming -batch rows at a time and
// at most -drain-rate a second. Beside every claim's round trip it times a
// SELECT 1 every 10 ms: what any statement waits on the machine meanwhile.
//
//	go run ./cmd/hookrelay-floor -mode pg-history -backlog 1000000 -workers 256 -batch 50
//
// It prints one JSON line: callbacks, rates, lost/duplicates/order
// violations from the sink's ledger, CPU milliseconds per callback of the
// relay, of PostgreSQL (every postgres process on the machine) and of the
// load generator with the sink, and (modes pg and pg-history) the claims'
// and the SELECT 1 probes' latency quantiles.
package floor

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// Run is the floor command: with the first argument "relay" it is the relay
// child (configured by its environment), otherwise it measures a relay child
// started from the running executable, which must therefore call Run too, and
// prints the result as one JSON line on stdout.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "relay" {
		return runRelay(ctx, os.Getenv)
	}
	r, err := runMeasure(ctx, args)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(r)
}

// options are the parent's flags.
type options struct {
	mode        string
	databaseURL string
	duration    time.Duration
	concurrency int
	rate        float64
	large       float64
	workers     int
	backlog     int64
	batch       int
	drainRate   float64
}

func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	fs.StringVar(&o.mode, "mode", "pg", "pg (durable relay), pg-history (and message and attempt history) or http (in-memory queue)")
	fs.StringVar(&o.databaseURL, "database-url", cmp.Or(os.Getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL for mode pg (a table floor_queue is created and dropped)")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "load duration")
	fs.IntVar(&o.concurrency, "concurrency", 256, "callbacks in flight from the load generator")
	fs.Float64Var(&o.rate, "rate", 0, "callbacks per second (open loop); 0: as fast as -concurrency allows. The pg relay\n"+
		"ingests faster than it delivers, so a closed loop measures it with a growing backlog: give a rate it keeps up with")
	fs.Float64Var(&o.large, "large-fraction", 0.05, "share of 30 KB callbacks")
	fs.IntVar(&o.workers, "workers", 64, "deliveries in flight in the relay")
	fs.Int64Var(&o.backlog, "backlog", 0, "a drain instead of a load: N callbacks are stored with the relay's dispatch paused,\n"+
		"then it drains them (-duration and -rate do not apply); modes pg and pg-history")
	fs.IntVar(&o.batch, "batch", 0, "most rows per claim; 0: as many as the relay has free delivery slots")
	fs.Float64Var(&o.drainRate, "drain-rate", 0, "most rows the relay claims per second (as HOOKRELAY_DISPATCH_MAX_RATE); 0: no cap")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.mode != "pg" && o.mode != "pg-history" && o.mode != "http" {
		return o, fmt.Errorf("-mode must be pg, pg-history or http, not %q", o.mode)
	}
	if o.backlog < 0 || o.batch < 0 || o.drainRate < 0 {
		return o, fmt.Errorf("-backlog, -batch and -drain-rate must not be negative")
	}
	if o.backlog > 0 && o.mode == "http" {
		return o, fmt.Errorf("-backlog needs a durable queue: -mode pg or pg-history")
	}
	return o, nil
}
