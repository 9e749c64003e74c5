package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/hookrelay/hookrelay/bench/load"
)

// flakyOptions are the flags of the flaky phase: ordered keys under
// transient failures (a share of first attempts answered 500).
type flakyOptions struct {
	keys      int
	rate      float64
	failure   float64
	orderings string
}

func addFlakyFlags(fs *flag.FlagSet) *flakyOptions {
	f := &flakyOptions{}
	fs.IntVar(&f.keys, "flaky-keys", 100, "flaky phase: tracking numbers (ordering keys)")
	fs.Float64Var(&f.rate, "flaky-rate", 300, "flaky phase: callbacks per second")
	fs.Float64Var(&f.failure, "flaky-failure", 0.05, "flaky phase: share of first attempts the sink answers 500 (0..1)")
	fs.StringVar(&f.orderings, "flaky-orderings", "key,none", "flaky phase: endpoint orderings to run it with, in order (key, none)")
	return f
}

func (f *flakyOptions) check() error {
	if f.keys < 1 || f.rate <= 0 || f.failure < 0 || f.failure >= 1 {
		return fmt.Errorf("%w: --flaky-keys must be at least 1, --flaky-rate positive, --flaky-failure in [0,1)", errUsage)
	}
	for _, o := range splitList(f.orderings) {
		if o != "key" && o != "none" {
			return fmt.Errorf("%w: --flaky-orderings: unknown ordering %q (want key, none)", errUsage, o)
		}
	}
	return nil
}

// flakyResult is a flaky phase's line: the common fields and what the phase
// is about.
type flakyResult struct {
	load.Result
	Ordering string `json:"ordering"`
	// DeliveredDuringLoad is the callbacks delivered while the load ran,
	// per second of it: whether dispatch keeps up with the offered rate
	// (delivered_per_sec also counts the drain after it).
	DeliveredDuringLoad float64 `json:"delivered_during_load_per_sec"`
	FirstFailureRate    float64 `json:"first_attempt_failure_rate"`
}

// flakyPhases runs the flaky phase once per --flaky-orderings: the
// endpoints are switched to that ordering, the sink fails the given share
// of first attempts, --flaky-keys keys are sent at --flaky-rate for
// --duration. The endpoints are left in ordering "key" and the sink healthy.
func (b *benchRun) flakyPhases(ctx context.Context) error {
	f := b.opts.flaky
	admin := &load.Admin{BaseURL: b.baseURL, Token: b.adminToken, Client: b.client}
	defer b.sink.SetFirstAttemptFailureRate(0)
	current := "key" // the endpoints' ordering as registered (set only on a change)
	for _, ordering := range splitList(f.orderings) {
		if ordering != current {
			if err := b.setOrdering(ctx, admin, ordering); err != nil {
				return err
			}
			current = ordering
		}
		if err := b.flakyPhase(ctx, ordering); err != nil {
			return err
		}
	}
	if current != "key" {
		return b.setOrdering(ctx, admin, "key")
	}
	return nil
}

func (b *benchRun) setOrdering(ctx context.Context, admin *load.Admin, ordering string) error {
	for _, id := range b.endpointIDs {
		if err := admin.SetEndpointOrdering(ctx, id, ordering); err != nil {
			return fmt.Errorf("flaky phase: set ordering %q: %w", ordering, err)
		}
	}
	return nil
}

func (b *benchRun) flakyPhase(ctx context.Context, ordering string) error {
	f := b.opts.flaky
	name := "flaky-" + ordering
	b.phaseNo++
	phase := b.phaseNo
	l := load.NewLedger(f.keys, b.endpointsOf)
	b.sink.SetLedger(phase, l)
	b.sink.SetFirstAttemptFailureRate(f.failure)
	b.resetStatements(ctx)
	start := b.take(ctx)
	cfg := b.loadConfig(phase, l)
	cfg.Keys, cfg.Duration, cfg.Rate = f.keys, b.opts.duration, f.rate
	fmt.Fprintf(b.stderr, "bench: phase %s for %s (%d keys, %.0f/s, %.0f%% of first attempts fail)\n",
		name, b.opts.duration, f.keys, f.rate, f.failure*100)
	res, err := load.RunLoad(ctx, cfg)
	if err != nil {
		return err
	}
	b.awaitDrain(ctx, l)
	b.sink.SetFirstAttemptFailureRate(0)
	end := b.take(ctx)
	if err := b.checkAlive(); err != nil {
		return err
	}
	r := flakyResult{Result: b.result(name, res, l, start, end), Ordering: ordering, FirstFailureRate: f.failure}
	r.OfferedPerSec = f.rate
	if !l.LastDelivery().IsZero() {
		r.DeliveredPerSec = round2(float64(r.Delivered) / l.LastDelivery().Sub(res.Start).Seconds())
	}
	a := l.Analyze()
	during := 0
	for i, lat := range a.Latencies {
		if !a.SentAt[i].Add(lat).After(res.End) {
			during++
		}
	}
	r.DeliveredDuringLoad = round2(float64(during) / res.Elapsed().Seconds())
	b.topStatements(ctx, name, r.Acknowledged)
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(b.stdout, "%s\n", strings.TrimSpace(string(raw)))
	return err
}
