package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hookrelay/hookrelay/bench/load"
)

// fairOptions size the isolation phases (burst, slow-tenant,
// many-endpoints); smaller values make smoke tests.
type fairOptions struct {
	burst         int64
	burstRate     float64
	slowBacklog   int64
	slowLatency   time.Duration
	tenants       int
	tenantRate    float64
	manyEndpoints int
	manyKeysPer   int
	manyRate      float64
}

func addFairnessFlags(fs *flag.FlagSet, o *fairOptions) {
	fs.Int64Var(&o.burst, "burst", 500000, "burst: callbacks tenant A sends as fast as it can")
	fs.Float64Var(&o.burstRate, "burst-b-rate", 200, "burst: tenant B's steady callbacks per second")
	fs.Int64Var(&o.slowBacklog, "slow-backlog", 100000, "slow-tenant: backlog of the slow endpoint A")
	fs.DurationVar(&o.slowLatency, "slow-latency", 2*time.Second, "slow-tenant: how long endpoint A takes to answer")
	fs.IntVar(&o.tenants, "tenants", 10, "slow-tenant: fast tenants beside A")
	fs.Float64Var(&o.tenantRate, "tenant-rate", 100, "slow-tenant: callbacks per second of each fast tenant")
	fs.IntVar(&o.manyEndpoints, "many-endpoints", 10000, "many-endpoints: endpoints (one merchant each)")
	fs.IntVar(&o.manyKeysPer, "many-keys", 10, "many-endpoints: ordering keys per endpoint")
	fs.Float64Var(&o.manyRate, "many-rate", 1000, "many-endpoints: callbacks per second in all")
}

// fairPhaseNames are the phases of this file.
var fairPhaseNames = []string{"burst", "slow-tenant", "many-endpoints"}

// runFairPhases runs the isolation phases asked for, in their order.
func (b *benchRun) runFairPhases(ctx context.Context) error {
	if b.opts.runs("burst") {
		if err := b.burstPhase(ctx); err != nil {
			return err
		}
	}
	if b.opts.runs("many-endpoints") {
		if err := b.manyEndpointsPhase(ctx); err != nil {
			return err
		}
	}
	// Last: the slow endpoint's backlog is deleted at the end, but its
	// deliveries in flight take their 2 s.
	if b.opts.runs("slow-tenant") {
		if err := b.slowTenantPhase(ctx); err != nil {
			return err
		}
	}
	return nil
}

// tenant is a merchant with endpoints on the sink, fed by its own ledger.
type tenant struct {
	merchantIDs []string
	endpointIDs []string
	sinkIDs     []int
}

// fairSinkNext numbers the sink endpoints of these phases apart from the
// ordinary ones (registration is sequential).
var fairSinkNext = 1_000_000

// newTenants registers n merchants with one sink endpoint each.
func (b *benchRun) newTenants(ctx context.Context, name string, n, maxInFlight int) (tenant, error) {
	admin := &load.Admin{BaseURL: b.baseURL, Token: b.adminToken, Client: b.client}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	t := tenant{merchantIDs: make([]string, n), endpointIDs: make([]string, n), sinkIDs: make([]int, n)}
	for i := range n {
		t.sinkIDs[i] = fairSinkNext
		fairSinkNext++
	}
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(n, 16) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				err := func() error {
					m, err := admin.CreateMerchant(ctx, fmt.Sprintf("%s-%d-%s", name, i, suffix))
					if err != nil {
						return err
					}
					ep, err := admin.CreateEndpoint(ctx, m.ID, b.sink.EndpointURL(t.sinkIDs[i]), nil, maxInFlight)
					if err != nil {
						return err
					}
					t.merchantIDs[i], t.endpointIDs[i] = m.ID, ep.ID
					return b.sink.SetSecret(t.sinkIDs[i], ep.Secret)
				}()
				if err != nil {
					mu.Lock()
					first = firstErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		return t, fmt.Errorf("register %s: %w", name, first)
	}
	return t, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// tenantLoad is one carrier's traffic to a tenant: keys spread over the
// tenant's merchants (key % merchants).
func (b *benchRun) tenantLoad(ctx context.Context, carrierName string, t tenant, keys int) (load.LoadConfig, *load.Ledger, error) {
	admin := &load.Admin{BaseURL: b.baseURL, Token: b.adminToken, Client: b.client}
	c, err := admin.CreateCarrier(ctx, carrierName+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		return load.LoadConfig{}, nil, fmt.Errorf("register carrier: %w", err)
	}
	b.phaseNo++
	phase := b.phaseNo
	n := len(t.merchantIDs)
	l := load.NewLedger(keys, func(key int) []int { return []int{t.sinkIDs[key%n]} })
	b.sink.SetLedger(phase, l)
	o := b.opts
	return load.LoadConfig{
		BaseURL: b.baseURL, CarrierKey: c.APIKey, Phase: phase, Keys: keys,
		MerchantOf: func(key int) string { return t.merchantIDs[key%n] }, SmallBytes: o.smallBytes,
		LargeBytes: o.largeBytes, LargeFraction: o.largeFraction, Concurrency: o.concurrency,
		Client: b.client, Ledger: l,
	}, l, nil
}

// background runs cfg until ctx ends (or cfg's own bound).
func background(ctx context.Context, cfg load.LoadConfig) <-chan loadOutcome {
	ch := make(chan loadOutcome, 1)
	go func() {
		res, err := load.RunLoad(ctx, cfg)
		ch <- loadOutcome{res, err}
	}()
	return ch
}

type loadOutcome struct {
	res *load.LoadResult
	err error
}

// finish prints a phase's result (tenantResult).
func (b *benchRun) finish(name string, res *load.LoadResult, l *load.Ledger, start, end snapshot) error {
	return b.printResult(b.tenantResult(name, res, l, start, end))
}

// tenantResult is a tenant's result in a phase; delivered/s is over the
// phase's first to last delivery.
func (b *benchRun) tenantResult(name string, res *load.LoadResult, l *load.Ledger, start, end snapshot) load.Result {
	r := b.result(name, res, l, start, end)
	r.OfferedPerSec = round2(float64(res.Sent) / res.Elapsed().Seconds())
	if first, last := l.FirstDelivery(), l.LastDelivery(); !first.IsZero() && last.After(first) {
		r.DeliveredPerSec = round2(float64(r.Delivered) / last.Sub(first).Seconds())
	}
	return r
}

// burstPhase: tenant B sends burst-b-rate/s alone (its latency with A
// idle), then tenant A sends --burst callbacks as fast as it can while B
// keeps its rate until A's last delivery: B's latency during A's drain, and
// A's drain rate.
func (b *benchRun) burstPhase(ctx context.Context) error {
	o := b.opts
	ta, err := b.newTenants(ctx, "burst-a", 1, o.maxInFlight)
	if err != nil {
		return err
	}
	tb, err := b.newTenants(ctx, "burst-b", 1, o.maxInFlight)
	if err != nil {
		return err
	}

	cfgB, lB, err := b.tenantLoad(ctx, "burst-b", tb, 1000)
	if err != nil {
		return err
	}
	cfgB.Rate, cfgB.Duration = o.fair.burstRate, o.duration
	fmt.Fprintf(b.stderr, "bench: phase burst: B alone at %.0f/s for %s\n", cfgB.Rate, o.duration)
	start := b.take(ctx)
	res, err := load.RunLoad(ctx, cfgB)
	if err != nil {
		return err
	}
	b.awaitDrain(ctx, lB)
	if err := b.finish("burst-b-idle", res, lB, start, b.take(ctx)); err != nil {
		return err
	}

	cfgA, lA, err := b.tenantLoad(ctx, "burst-a", ta, o.keys)
	if err != nil {
		return err
	}
	cfgA.MaxAcked = o.fair.burst
	cfgB, lB, err = b.tenantLoad(ctx, "burst-b", tb, 1000)
	if err != nil {
		return err
	}
	cfgB.Rate, cfgB.Duration = o.fair.burstRate, 24*time.Hour // until stopped
	fmt.Fprintf(b.stderr, "bench: phase burst: A sends %d as fast as it can, B at %.0f/s until A drained\n", cfgA.MaxAcked, cfgB.Rate)
	start = b.take(ctx)
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	bDone := background(bctx, cfgB)
	resA, err := load.RunLoad(ctx, cfgA)
	if err != nil {
		return err
	}
	b.awaitDrain(ctx, lA)
	stopB()
	outB := <-bDone
	if outB.err != nil {
		return outB.err
	}
	b.awaitDrain(ctx, lB)
	end := b.take(ctx)
	if err := b.checkAlive(); err != nil {
		return err
	}
	if err := b.finish("burst-a-drain", resA, lA, start, end); err != nil {
		return err
	}
	r := burstBResult{Result: b.tenantResult("burst-b-during", outB.res, lB, start, end)}
	r.split(lB.Analyze(), resA.End)
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(b.stdout, "%s\n", raw)
	return err
}

// burstBResult is B's line of the burst phase, with its latency split at
// A's last acknowledged callback: while A was still sending (ingest and
// dispatch both loaded) and during the rest of A's drain (dispatch alone).
type burstBResult struct {
	load.Result
	SendingP50ms  *float64 `json:"e2e_p50_ms_a_sending"`
	SendingP99ms  *float64 `json:"e2e_p99_ms_a_sending"`
	DrainingP50ms *float64 `json:"e2e_p50_ms_a_draining"`
	DrainingP99ms *float64 `json:"e2e_p99_ms_a_draining"`
}

func (r *burstBResult) split(a load.Accounting, aSent time.Time) {
	var sending, draining []time.Duration
	for i, lat := range a.Latencies {
		if a.SentAt[i].Before(aSent) {
			sending = append(sending, lat)
		} else {
			draining = append(draining, lat)
		}
	}
	slices.Sort(sending)
	slices.Sort(draining)
	r.SendingP50ms, r.SendingP99ms = load.Percentile(sending, 0.5), load.Percentile(sending, 0.99)
	r.DrainingP50ms, r.DrainingP99ms = load.Percentile(draining, 0.5), load.Percentile(draining, 0.99)
}

// slowTenantPhase: endpoint A answers in --slow-latency with max_in_flight
// 50 and a backlog of --slow-backlog; --tenants fast tenants send
// --tenant-rate/s each: their end-to-end latency. A is deleted afterwards
// (with its backlog).
func (b *benchRun) slowTenantPhase(ctx context.Context) error {
	o := b.opts
	ta, err := b.newTenants(ctx, "slow-a", 1, 50)
	if err != nil {
		return err
	}
	b.sink.SetLatency(ta.sinkIDs[0], o.fair.slowLatency)
	others, err := b.newTenants(ctx, "fast", o.fair.tenants, o.maxInFlight)
	if err != nil {
		return err
	}
	// The fast tenants alone first: their latency with A idle, the
	// machine's own at this rate.
	if err := b.fastTenants(ctx, others, "slow-tenant-others-idle", "alone"); err != nil {
		return err
	}
	cfgA, _, err := b.tenantLoad(ctx, "slow-a", ta, o.keys)
	if err != nil {
		return err
	}
	cfgA.MaxAcked = o.fair.slowBacklog
	fmt.Fprintf(b.stderr, "bench: phase slow-tenant: filling A's backlog of %d\n", cfgA.MaxAcked)
	if _, err := load.RunLoad(ctx, cfgA); err != nil {
		return err
	}
	if err := b.fastTenants(ctx, others, "slow-tenant-others", "beside A"); err != nil {
		return err
	}
	admin := &load.Admin{BaseURL: b.baseURL, Token: b.adminToken, Client: b.client}
	return admin.DeleteEndpoint(ctx, ta.endpointIDs[0])
}

// fastTenants runs the slow-tenant phase's fast tenants for --duration at
// --tenant-rate each and prints their result as name.
func (b *benchRun) fastTenants(ctx context.Context, others tenant, name, what string) error {
	o := b.opts
	cfg, l, err := b.tenantLoad(ctx, "fast", others, 100*o.fair.tenants)
	if err != nil {
		return err
	}
	cfg.Rate, cfg.Duration = o.fair.tenantRate*float64(o.fair.tenants), o.duration
	fmt.Fprintf(b.stderr, "bench: phase slow-tenant: %d tenants at %.0f/s each for %s %s\n", o.fair.tenants, o.fair.tenantRate, o.duration, what)
	start := b.take(ctx)
	res, err := load.RunLoad(ctx, cfg)
	if err != nil {
		return err
	}
	b.awaitDrain(ctx, l)
	end := b.take(ctx)
	if err := b.checkAlive(); err != nil {
		return err
	}
	return b.finish(name, res, l, start, end)
}

// manyEndpointsPhase: --many-rate/s for --duration to one endpoint, then
// the same spread over --many-endpoints endpoints (--many-keys keys each):
// claim latency and CPU per callback side by side.
func (b *benchRun) manyEndpointsPhase(ctx context.Context) error {
	o := b.opts
	keys := o.fair.manyEndpoints * o.fair.manyKeysPer
	one, err := b.newTenants(ctx, "single", 1, o.maxInFlight)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.stderr, "bench: phase many-endpoints: registering %d endpoints\n", o.fair.manyEndpoints)
	many, err := b.newTenants(ctx, "many", o.fair.manyEndpoints, o.maxInFlight)
	if err != nil {
		return err
	}
	for _, run := range []struct {
		name string
		t    tenant
	}{{"many-endpoints-1", one}, {"many-endpoints-" + strconv.Itoa(o.fair.manyEndpoints), many}} {
		cfg, l, err := b.tenantLoad(ctx, run.name, run.t, keys)
		if err != nil {
			return err
		}
		cfg.Rate, cfg.Duration = o.fair.manyRate, o.duration
		fmt.Fprintf(b.stderr, "bench: phase %s at %.0f/s for %s\n", run.name, cfg.Rate, o.duration)
		b.resetStatements(ctx)
		start := b.take(ctx)
		res, err := load.RunLoad(ctx, cfg)
		if err != nil {
			return err
		}
		b.awaitDrain(ctx, l)
		end := b.take(ctx)
		if err := b.checkAlive(); err != nil {
			return err
		}
		if err := b.finish(run.name, res, l, start, end); err != nil {
			return err
		}
		b.topStatements(ctx, run.name, res.Acked)
	}
	return nil
}
