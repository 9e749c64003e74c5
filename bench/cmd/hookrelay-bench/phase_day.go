package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/hookrelay/hookrelay/bench/load"
)

// dayOptions shape the day and idle phases.
type dayOptions struct {
	// peak is the rate of the busy window, callbacks per second; the valley
	// runs at peak/valleyRatio.
	peak float64
	// length is the whole day, compressed.
	length time.Duration
	// peakShare is the share of the day's callbacks sent inside the busy
	// window.
	peakShare float64
	// idle is how long the idle phase measures a service with no traffic.
	idle time.Duration
}

// valleyRatio is the day's peak-to-valley ratio.
const valleyRatio = 8

func addDayFlags(fs *flag.FlagSet, o *dayOptions) {
	fs.Float64Var(&o.peak, "day-peak", 2000, "day: callbacks per second of the busy window (the valley runs at 1/8 of it)")
	fs.DurationVar(&o.length, "day-length", 2*time.Minute, "day: the whole day, compressed")
	fs.Float64Var(&o.peakShare, "day-peak-share", 0.6, "day: share of the day's callbacks inside the busy window (0..1)")
	fs.DurationVar(&o.idle, "idle", time.Minute, "idle: how long the service is measured with no traffic")
}

func (o dayOptions) check() error {
	switch {
	case o.peak <= 0, o.length <= 0, o.idle <= 0:
		return fmt.Errorf("%w: --day-peak, --day-length and --idle must be positive", errUsage)
	case o.peakShare <= 1.0/valleyRatio || o.peakShare >= 1:
		return fmt.Errorf("%w: --day-peak-share must be in (0.125, 1)", errUsage)
	}
	return nil
}

// window returns when the busy window starts and how long it lasts: it
// holds peakShare of the day's callbacks, centred in the day. With p the
// peak rate, v = p/8 the valley's, w the window and D the day:
// p·w = share·(p·w + v·(D − w)).
func (o dayOptions) window() (start, length time.Duration) {
	v := 1.0 / valleyRatio
	w := o.peakShare * v / ((1 - o.peakShare) + o.peakShare*v)
	length = time.Duration(w * float64(o.length))
	return (o.length - length) / 2, length
}

// dayResult is the day phase's JSON line.
type dayResult struct {
	Phase       string  `json:"phase"`
	PeakPerSec  float64 `json:"peak_per_sec"`
	ValleyPerSc float64 `json:"valley_per_sec"`
	PeakSec     float64 `json:"peak_window_s"`
	DaySec      float64 `json:"day_s"`
	Acked       int64   `json:"acknowledged"`
	Delivered   int64   `json:"delivered"`
	Lost        int64   `json:"lost"`
	Duplicates  int64   `json:"duplicates"`
	OrderViol   int64   `json:"order_violations"`
	// CPU-seconds of the service and of PostgreSQL per million callbacks,
	// over the whole day and its drain.
	ServiceCPUPerM  float64  `json:"service_cpu_s_per_million"`
	PostgresCPUPerM float64  `json:"postgres_cpu_s_per_million"`
	TotalCPUPerM    float64  `json:"total_cpu_s_per_million"`
	StatementsPerCB *float64 `json:"statements_per_callback,omitempty"`
	CommitsPerCB    *float64 `json:"commits_per_callback,omitempty"`
	ValleyP50ms     *float64 `json:"valley_e2e_p50_ms"`
	ValleyP99ms     *float64 `json:"valley_e2e_p99_ms"`
	PeakP50ms       *float64 `json:"peak_e2e_p50_ms"`
	PeakP99ms       *float64 `json:"peak_e2e_p99_ms"`
	// The same CPU per callback for the valley and the window alone (ms;
	// deliveries crossing a boundary count where they were made).
	ValleyCPUms *float64 `json:"valley_cpu_ms_per_callback"`
	PeakCPUms   *float64 `json:"peak_cpu_ms_per_callback"`
}

// dayPhase runs a day's shape compressed into --day-length: a valley at
// 1/8 of --day-peak, a busy window at the peak holding --day-peak-share of
// the callbacks, the valley again.
func (b *benchRun) dayPhase(ctx context.Context) error {
	o := b.opts.day
	phase, l := b.newLedger()
	b.resetStatements(ctx)
	wStart, wLen := o.window()
	valley := o.peak / valleyRatio
	cfg := b.loadConfig(phase, l)
	cfg.Duration = o.length
	cfg.RateAt = func(at time.Duration) float64 {
		if at >= wStart && at < wStart+wLen {
			return o.peak
		}
		return valley
	}
	fmt.Fprintf(b.stderr, "bench: phase day for %s: %.0f/s, %.0f/s from %s for %s, then %.0f/s\n",
		o.length, valley, o.peak, wStart, wLen, valley)
	// Snapshots at the window's edges split the CPU.
	start := b.take(ctx)
	// The marks are taken by a goroutine of their own; the statistics
	// connection serves one query at a time, so the last snapshot waits for
	// it to end (the load outlasts the window, so both marks are taken by
	// then unless the load failed).
	marks := make(chan snapshot, 2)
	markCtx, stopMarks := context.WithCancel(ctx)
	marksDone := make(chan struct{})
	go func() {
		defer close(marksDone)
		for _, at := range []time.Duration{wStart, wStart + wLen} {
			select {
			case <-markCtx.Done():
				return
			case <-time.After(time.Until(start.at.Add(at))):
			}
			marks <- b.take(markCtx)
		}
	}()
	res, err := load.RunLoad(ctx, cfg)
	if err != nil {
		stopMarks()
		<-marksDone
		return err
	}
	<-marksDone
	stopMarks()
	b.awaitDrain(ctx, l)
	end := b.take(ctx)
	if err := b.checkAlive(); err != nil {
		return err
	}
	a := l.Analyze()
	r := dayResult{
		Phase: "day", PeakPerSec: o.peak, ValleyPerSc: valley, PeakSec: round2(wLen.Seconds()),
		DaySec: round2(res.Elapsed().Seconds()), Acked: res.Acked, Delivered: int64(a.Delivered),
		Lost: int64(a.Lost), Duplicates: int64(a.Duplicates), OrderViol: int64(a.OrderViolations),
	}
	cb := float64(max(res.Acked, 1))
	perM := func(from, to int64) float64 {
		return round2(load.TicksToDuration(to-from).Seconds() / cb * 1e6)
	}
	if start.serviceCPU >= 0 && end.serviceCPU >= 0 {
		r.ServiceCPUPerM = perM(start.serviceCPU, end.serviceCPU)
	}
	if start.postgresCPU >= 0 && end.postgresCPU >= 0 {
		r.PostgresCPUPerM = perM(start.postgresCPU, end.postgresCPU)
	}
	r.TotalCPUPerM = round2(r.ServiceCPUPerM + r.PostgresCPUPerM)
	if start.pgOK && end.pgOK {
		r.CommitsPerCB = load.Float(float64(end.pg.Commits-start.pg.Commits) / cb)
		if start.pg.Statements >= 0 {
			r.StatementsPerCB = load.Float(float64(end.pg.Statements-start.pg.Statements) / cb)
		}
	}
	// Latencies by when the callback was sent.
	var inValley, inPeak []time.Duration
	var nValley, nPeak float64
	ws, we := res.Start.Add(wStart), res.Start.Add(wStart+wLen)
	for i, d := range a.Latencies {
		if t := a.SentAt[i]; !t.Before(ws) && t.Before(we) {
			inPeak = append(inPeak, d)
		} else {
			inValley = append(inValley, d)
		}
	}
	nValley, nPeak = float64(len(inValley)), float64(len(inPeak))
	slices.Sort(inValley)
	slices.Sort(inPeak)
	r.ValleyP50ms, r.ValleyP99ms = load.Percentile(inValley, 0.5), load.Percentile(inValley, 0.99)
	r.PeakP50ms, r.PeakP99ms = load.Percentile(inPeak, 0.5), load.Percentile(inPeak, 0.99)
	if len(marks) == 2 && start.serviceCPU >= 0 && start.postgresCPU >= 0 {
		m1, m2 := <-marks, <-marks
		cpu := func(s snapshot) int64 { return s.serviceCPU + s.postgresCPU }
		valleyTicks := cpu(m1) - cpu(start) + cpu(end) - cpu(m2)
		peakTicks := cpu(m2) - cpu(m1)
		r.ValleyCPUms = load.Float(float64(load.TicksToDuration(valleyTicks).Microseconds()) / 1e3 / max(nValley, 1))
		r.PeakCPUms = load.Float(float64(load.TicksToDuration(peakTicks).Microseconds()) / 1e3 / max(nPeak, 1))
	}
	b.topStatements(ctx, "day", res.Acked)
	return b.printJSON(r)
}

// idleResult is the idle phase's JSON line.
type idleResult struct {
	Phase          string  `json:"phase"`
	DurationSec    float64 `json:"duration_s"`
	ServiceCPUSec  float64 `json:"service_cpu_s"`
	PostgresCPUSec float64 `json:"postgres_cpu_s"`
	// PctOfCore is service and PostgreSQL together, in percent of one core.
	PctOfCore  float64 `json:"pct_of_one_core"`
	Statements *int64  `json:"statements,omitempty"`
	Commits    int64   `json:"commits"`
}

// idlePhase measures the service and PostgreSQL with no traffic for --idle,
// after the deliveries of earlier phases are done.
func (b *benchRun) idlePhase(ctx context.Context) error {
	fmt.Fprintf(b.stderr, "bench: phase idle for %s\n", b.opts.day.idle)
	b.resetStatements(ctx)
	start := b.take(ctx)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.opts.day.idle):
	}
	end := b.take(ctx)
	if err := b.checkAlive(); err != nil {
		return err
	}
	el := end.at.Sub(start.at)
	r := idleResult{Phase: "idle", DurationSec: round2(el.Seconds())}
	if start.serviceCPU >= 0 && end.serviceCPU >= 0 {
		r.ServiceCPUSec = round2(load.TicksToDuration(end.serviceCPU - start.serviceCPU).Seconds())
	}
	if start.postgresCPU >= 0 && end.postgresCPU >= 0 {
		r.PostgresCPUSec = round2(load.TicksToDuration(end.postgresCPU - start.postgresCPU).Seconds())
	}
	r.PctOfCore = round2(100 * (r.ServiceCPUSec + r.PostgresCPUSec) / el.Seconds())
	if start.pgOK && end.pgOK {
		r.Commits = end.pg.Commits - start.pg.Commits
		if start.pg.Statements >= 0 {
			n := end.pg.Statements - start.pg.Statements
			r.Statements = &n
		}
	}
	b.topStatements(ctx, "idle", 1)
	return b.printJSON(r)
}

// printJSON writes v as one JSON line.
func (b *benchRun) printJSON(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(b.stdout, "%s\n", raw)
	return err
}
