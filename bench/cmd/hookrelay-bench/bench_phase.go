package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay/bench/load"
)

// Histograms read from the service's /metrics: the dispatch role's claim
// latency (a reported field) and, for the diagnosis, ingest group-commit and
// delivery details.
const (
	claimHistogram      = "hookrelay_dispatch_claim_seconds"
	claimWaitHistogram  = "hookrelay_dispatch_claim_wait_seconds"
	claimServerHisto    = "hookrelay_dispatch_claim_server_seconds"
	deliveryHistogram   = "hookrelay_delivery_latency_seconds"
	ackBatchHistogram   = "hookrelay_ack_batch_size"
	ingestBatchHisogram = "hookrelay_ingest_batch_size"
	ingestCommitHisto   = "hookrelay_ingest_commit_seconds"
	schedLatencyHisto   = "go_sched_latencies_seconds"
)

// benchRun is the state of one `hookrelay bench`.
type benchRun struct {
	opts   *benchOptions
	stdout io.Writer
	stderr io.Writer
	client *http.Client
	sink   *load.Sink
	pg     *load.PGStats

	baseURL     string
	adminToken  string
	carrierKey  string
	merchantIDs []string
	endpointIDs []string // by sink endpoint number
	metricsURLs []string // /metrics of the dispatch processes
	targetPIDs  []int    // --service-pids

	launcher  *benchLauncher
	api       *benchService
	dispatch  []*benchService
	dbURL     string // sampled for pg_stat_*
	createdDB string // dropped at the end
	tempDir   string
	phaseNo   int
}

// snapshot is what is sampled at the start and end of a phase.
type snapshot struct {
	at          time.Time
	serviceCPU  int64 // ticks; -1 unknown
	postgresCPU int64
	benchCPU    int64
	hist        map[string]load.Histogram // summed over the processes
	pg          load.PGSample
	pgOK        bool
	// pressure is the machine's cumulative CPU pressure; -1 unknown.
	pressure time.Duration
}

func (b *benchRun) endpointsOf(key int) []int {
	m := key % b.opts.merchants
	eps := make([]int, b.opts.endpointsPer)
	for e := range eps {
		eps[e] = m*b.opts.endpointsPer + e
	}
	return eps
}

func (b *benchRun) merchantOf(key int) string { return b.merchantIDs[key%b.opts.merchants] }

func (b *benchRun) servicePIDs() []int {
	if b.targetPIDs != nil {
		return b.targetPIDs
	}
	var pids []int
	if b.api != nil && b.api.pid != 0 {
		pids = append(pids, b.api.pid)
	}
	for _, d := range b.dispatch {
		if d.pid != 0 {
			pids = append(pids, d.pid)
		}
	}
	return pids
}

func (b *benchRun) take(ctx context.Context) snapshot {
	s := snapshot{at: time.Now(), serviceCPU: -1, postgresCPU: -1, pressure: -1}
	s.benchCPU, _ = load.ProcCPU(os.Getpid(), false)
	if p, err := load.CPUPressure(); err == nil {
		s.pressure = p
	}
	if pids := b.servicePIDs(); len(pids) > 0 {
		s.serviceCPU = 0
		for _, pid := range pids {
			t, err := load.ProcCPU(pid, false)
			if err != nil {
				s.serviceCPU = -1
				break
			}
			s.serviceCPU += t
		}
	}
	postmaster := 0
	if b.pg != nil {
		postmaster = b.pg.Postmaster
	}
	if t, err := load.PostgresCPU(postmaster); err == nil && t > 0 {
		s.postgresCPU = t
	}
	s.hist = map[string]load.Histogram{}
	scrape := func(url string, names ...string) {
		hs, err := load.ScrapeHistograms(ctx, b.client, url, names...)
		if err != nil {
			fmt.Fprintf(b.stderr, "bench: %v\n", err)
			return
		}
		for n, h := range hs {
			s.hist[n] = s.hist[n].Add(h)
		}
	}
	for _, u := range b.metricsURLs {
		scrape(u, claimHistogram, claimServerHisto, claimWaitHistogram, deliveryHistogram, ackBatchHistogram, schedLatencyHisto)
	}
	scrape(b.baseURL+"/metrics", ingestBatchHisogram, ingestCommitHisto)
	if b.pg != nil {
		if p, err := b.pg.Sample(ctx); err == nil {
			s.pg, s.pgOK = p, true
		} else {
			fmt.Fprintf(b.stderr, "bench: %v\n", err)
		}
	}
	return s
}

func (b *benchRun) loadConfig(phase int, l *load.Ledger) load.LoadConfig {
	o := b.opts
	return load.LoadConfig{
		BaseURL: b.baseURL, CarrierKey: b.carrierKey, Phase: phase, Keys: o.keys,
		MerchantOf: b.merchantOf, SmallBytes: o.smallBytes, LargeBytes: o.largeBytes,
		LargeFraction: o.largeFraction, Concurrency: o.concurrency, Client: b.client, Ledger: l,
	}
}

func (b *benchRun) newLedger() (int, *load.Ledger) {
	b.phaseNo++
	l := load.NewLedger(b.opts.keys, b.endpointsOf)
	b.sink.SetLedger(b.phaseNo, l)
	return b.phaseNo, l
}

func (b *benchRun) runPhases(ctx context.Context) error {
	o := b.opts
	if o.warmup > 0 {
		phase, l := b.newLedger()
		cfg := b.loadConfig(phase, l)
		cfg.Duration, cfg.Rate = o.warmup, 500
		if _, err := load.RunLoad(ctx, cfg); err != nil {
			return err
		}
		b.awaitDrain(ctx, l)
	}
	if o.runs("max") {
		if err := b.loadPhase(ctx, "max-rate", 0); err != nil {
			return err
		}
	}
	if o.runs("rates") {
		for _, r := range o.rates {
			if err := b.loadPhase(ctx, "rate-"+strconv.FormatFloat(r, 'f', -1, 64), r); err != nil {
				return err
			}
		}
	}
	if o.runs("day") {
		if err := b.dayPhase(ctx); err != nil {
			return err
		}
	}
	if o.runs("flaky") {
		if err := b.flakyPhases(ctx); err != nil {
			return err
		}
	}
	if o.runs("refusal-flood") {
		if err := b.refusalFloodPhase(ctx); err != nil {
			return err
		}
	}
	if o.runs("backlog") && o.backlog > 0 {
		if b.launcher == nil {
			fmt.Fprintln(b.stderr, "bench: backlog-drain phase skipped: with --target the benchmark cannot pause dispatch")
			return nil
		}
		if err := b.backlogPhase(ctx); err != nil {
			return err
		}
	}
	if err := b.runFairPhases(ctx); err != nil {
		return err
	}
	if err := b.runPullPhases(ctx); err != nil {
		return err
	}
	if o.runs("idle") {
		return b.idlePhase(ctx)
	}
	return nil
}

// loadPhase runs carrier load for --duration at rate (0 = as fast as it
// goes), waits for the deliveries and prints the result.
func (b *benchRun) loadPhase(ctx context.Context, name string, rate float64) error {
	phase, l := b.newLedger()
	b.resetStatements(ctx)
	start := b.take(ctx)
	cfg := b.loadConfig(phase, l)
	cfg.Duration, cfg.Rate = b.opts.duration, rate
	fmt.Fprintf(b.stderr, "bench: phase %s for %s\n", name, b.opts.duration)
	res, err := load.RunLoad(ctx, cfg)
	if err != nil {
		return err
	}
	b.awaitDrain(ctx, l)
	end := b.take(ctx)
	if err := b.checkAlive(); err != nil {
		return err
	}
	r := b.result(name, res, l, start, end)
	r.OfferedPerSec = rate
	if rate == 0 {
		r.OfferedPerSec = round2(float64(res.Sent) / res.Elapsed().Seconds())
	}
	if first := res.Start; !l.LastDelivery().IsZero() {
		r.DeliveredPerSec = round2(float64(r.Delivered) / l.LastDelivery().Sub(first).Seconds())
	}
	b.topStatements(ctx, name, r.Acknowledged)
	return b.printResult(r)
}

// backlogPhase stops dispatch, piles up --backlog deliveries, then starts
// the dispatchers and measures the drain.
func (b *benchRun) backlogPhase(ctx context.Context) error {
	o := b.opts
	if err := b.stopDispatchers(); err != nil {
		return err
	}
	if o.dispatchers == 0 {
		if err := b.restartAPI(ctx, false); err != nil {
			return err
		}
	}
	phase, l := b.newLedger()
	callbacks := int64(math.Ceil(float64(o.backlog) / float64(o.endpointsPer)))
	fmt.Fprintf(b.stderr, "bench: phase backlog-drain: filling %d deliveries (%d callbacks) with dispatch stopped\n", o.backlog, callbacks)
	cfg := b.loadConfig(phase, l)
	cfg.MaxAcked = callbacks
	res, err := load.RunLoad(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.stderr, "bench: backlog filled at %.0f callbacks/s; starting %d dispatcher(s)\n",
		float64(res.Acked)/res.Elapsed().Seconds(), o.dispatchers)
	dispatchStart := time.Now()
	if o.dispatchers == 0 {
		// The drain is measured from the restart: the new process's CPU
		// and claims count from zero like those of started dispatchers.
		if err := b.restartAPI(ctx, true); err != nil {
			return err
		}
	}
	b.resetStatements(ctx)
	start := b.take(ctx) // no dispatcher yet: their CPU and claims count from zero
	if err := b.startDispatchers(ctx); err != nil {
		return err
	}
	b.awaitDrain(ctx, l)
	end := b.take(ctx)
	if err := b.checkAlive(); err != nil {
		return err
	}
	r := b.result("backlog-drain", res, l, start, end)
	r.OfferedPerSec = round2(float64(res.Sent) / res.Elapsed().Seconds())
	r.BacklogDeliveries = int64(r.Delivered) + r.Lost
	if first, last := l.FirstDelivery(), l.LastDelivery(); !first.IsZero() && last.After(first) {
		r.DeliveredPerSec = round2(float64(r.Delivered) / last.Sub(first).Seconds())
		r.DrainSec = round2(last.Sub(first).Seconds())
		s := round2(first.Sub(dispatchStart).Seconds())
		r.FirstDeliverySec = &s
	}
	b.topStatements(ctx, "backlog-drain", r.Acknowledged)
	return b.printResult(r)
}

// checkAlive fails when a started service process has exited: the phase's
// numbers would be meaningless.
func (b *benchRun) checkAlive() error {
	for _, s := range append([]*benchService{b.api}, b.dispatch...) {
		if s == nil {
			continue
		}
		select {
		case <-s.exited:
			where := ""
			if s.logTo != "" {
				where = "; see " + s.logTo
			}
			return fmt.Errorf("service process (%s) exited during the phase%s", s.roles, where)
		default:
		}
	}
	return nil
}

// awaitDrain waits until every expected delivery arrived, or no new one
// arrived for --drain-timeout.
func (b *benchRun) awaitDrain(ctx context.Context, l *load.Ledger) {
	_, lastCount := l.Progress()
	lastProgress := time.Now()
	tick := time.NewTicker(b.opts.settleInterval)
	defer tick.Stop()
	for {
		exp, got := l.Progress()
		if got >= exp && l.Analyze().Lost == 0 {
			return
		}
		if got != lastCount {
			lastCount, lastProgress = got, time.Now()
		} else if time.Since(lastProgress) > b.opts.drainTimeout {
			fmt.Fprintf(b.stderr, "bench: gave up waiting: %d of %d deliveries arrived, none for %s\n", got, exp, b.opts.drainTimeout)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// result assembles the common fields of a phase.
func (b *benchRun) result(name string, res *load.LoadResult, l *load.Ledger, start, end snapshot) load.Result {
	a := l.Analyze()
	r := load.Result{
		Phase:          name,
		IngestPerSec:   round2(float64(res.Acked) / res.Elapsed().Seconds()),
		Sent:           res.Sent,
		Acknowledged:   res.Acked,
		Delivered:      int64(a.Delivered),
		Lost:           int64(a.Lost),
		Duplicates:     int64(a.Duplicates),
		OrderViolation: int64(a.OrderViolations),
		Unexpected:     int64(a.Unexpected),
		DurationSec:    round2(res.Elapsed().Seconds()),
		Fanout:         b.opts.endpointsPer,
	}
	r.SetLatencies(a.Latencies)
	r.SetAckLatencies(res.AckLatencies)
	if b.opts.latencyLog != "" {
		if err := appendLatencyLog(b.opts.latencyLog, name, a); err != nil {
			fmt.Fprintf(b.stderr, "bench: %s: latency log: %v\n", name, err)
		}
	}
	if last := l.LastDelivery(); last.After(res.End) {
		r.DrainSec = round2(last.Sub(res.End).Seconds())
	}
	if len(res.Statuses) > 0 {
		r.Rejected = map[string]int64{}
		for st, n := range res.Statuses {
			r.Rejected[strconv.Itoa(st)] = n
		}
		fmt.Fprintf(b.stderr, "bench: %s: rejected callbacks %v, e.g. %q\n", name, res.Statuses, res.Errors)
	}
	cb := float64(max(res.Acked, 1))
	if start.serviceCPU >= 0 && end.serviceCPU >= 0 {
		d := load.TicksToDuration(end.serviceCPU - start.serviceCPU)
		r.ServiceCPUSec = round2(d.Seconds())
		r.ServiceCPUms = load.Float(float64(d.Microseconds()) / 1e3 / cb)
	}
	if start.postgresCPU >= 0 && end.postgresCPU >= 0 {
		d := load.TicksToDuration(end.postgresCPU - start.postgresCPU)
		r.PostgresCPUSec = round2(d.Seconds())
		r.PostgresCPUms = load.Float(float64(d.Microseconds()) / 1e3 / cb)
	}
	delta := func(name string) load.Histogram { return end.hist[name].Sub(start.hist[name]) }
	claims := delta(claimHistogram)
	r.ClaimCount = claims.Total()
	r.ClaimP50ms = load.Float(claims.Quantile(0.5) * 1e3)
	r.ClaimP99ms = load.Float(claims.Quantile(0.99) * 1e3)
	r.ClaimWaitP99ms = load.Float(delta(claimWaitHistogram).Quantile(0.99) * 1e3)
	server := delta(claimServerHisto)
	r.ClaimServerP50ms = load.Float(server.Quantile(0.5) * 1e3)
	r.ClaimServerP99ms = load.Float(server.Quantile(0.99) * 1e3)
	deliveries := delta(deliveryHistogram)
	r.DeliveryHTTPP50ms = load.Float(deliveries.Quantile(0.5) * 1e3)
	r.DeliveryHTTPP99ms = load.Float(deliveries.Quantile(0.99) * 1e3)
	r.AckBatchP50 = load.Float(delta(ackBatchHistogram).Quantile(0.5))
	r.SchedLatencyP99ms = load.Float(delta(schedLatencyHisto).Quantile(0.99) * 1e3)
	r.IngestBatchP50 = load.Float(delta(ingestBatchHisogram).Quantile(0.5))
	commits := delta(ingestCommitHisto)
	r.IngestCommitP50ms = load.Float(commits.Quantile(0.5) * 1e3)
	r.IngestCommitP99ms = load.Float(commits.Quantile(0.99) * 1e3)
	if start.pgOK && end.pgOK {
		r.CommitsPerCB = load.Float(float64(end.pg.Commits-start.pg.Commits) / cb)
		r.WALBytesPerCB = load.Float(float64(end.pg.WALBytes-start.pg.WALBytes) / cb)
		if start.pg.Statements >= 0 {
			r.StatementsPerCB = load.Float(float64(end.pg.Statements-start.pg.Statements) / cb)
		}
	}
	r.SinkBadSignatures = b.sink.Stats().BadSignature
	benchCPU := load.TicksToDuration(end.benchCPU - start.benchCPU)
	r.BenchCPUSec = round2(benchCPU.Seconds())
	r.BenchCPUms = load.Float(float64(benchCPU.Microseconds()) / 1e3 / cb)
	r.LoadAvg1m = load.LoadAvg1m()
	r.CPUPressurePct = load.PressurePct(start.pressure, end.pressure, end.at.Sub(start.at))
	return r
}

func (b *benchRun) resetStatements(ctx context.Context) {
	if b.pg != nil && b.opts.pgTop > 0 {
		if err := b.pg.ResetStatements(ctx); err != nil {
			fmt.Fprintf(b.stderr, "bench: %v\n", err)
		}
	}
}

func (b *benchRun) topStatements(ctx context.Context, phase string, callbacks int64) {
	if b.pg == nil || b.opts.pgTop <= 0 || !b.pg.HasStatements() {
		return
	}
	fmt.Fprintf(b.stderr, "bench: %s: top statements by total time (%d callbacks)\n", phase, callbacks)
	if err := b.pg.TopStatements(ctx, b.stderr, b.opts.pgTop, callbacks); err != nil {
		fmt.Fprintf(b.stderr, "bench: %v\n", err)
	}
}

func round2(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*100) / 100
}

// appendLatencyLog appends one line per delivery of a phase to
// path: the phase, the request's start (Unix microseconds) and its
// end-to-end latency (microseconds). Sorted by start, a second's worth of
// lines shows whether a tail is spread out or a stall of everything at once.
func appendLatencyLog(path, phase string, a load.Accounting) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i, d := range a.Latencies {
		fmt.Fprintf(w, "%s %d %d\n", phase, a.SentAt[i].UnixMicro(), d.Microseconds())
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
