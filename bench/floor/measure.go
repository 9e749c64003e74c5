package floor

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay/bench/load"
)

// result is the one JSON line floor prints.
type result struct {
	Mode            string  `json:"mode"`
	Callbacks       int     `json:"callbacks"` // acknowledged by the relay
	Delivered       int     `json:"delivered"`
	IngestPerSec    float64 `json:"ingest_per_s"`
	DeliveredPerSec float64 `json:"delivered_per_s"`
	Lost            int     `json:"lost"`
	Duplicates      int     `json:"duplicates"`
	OrderViolations int     `json:"order_violations"` // the relay does not keep order; reported for completeness
	E2EP50ms        float64 `json:"e2e_p50_ms"`
	E2EP99ms        float64 `json:"e2e_p99_ms"`
	RelayCPUms      float64 `json:"relay_cpu_ms_per_cb"`
	PostgresCPUms   float64 `json:"postgres_cpu_ms_per_cb"`
	RelayPlusPGms   float64 `json:"relay_plus_postgres_cpu_ms_per_cb"`
	BenchCPUms      float64 `json:"bench_cpu_ms_per_cb"` // load generator + sink
	LoadAvg1m       float64 `json:"loadavg_1m"`
	// CPUPressurePct is the share of the run in which some task on the
	// machine waited for a CPU (hookrelay bench's field of the same name).
	CPUPressurePct *float64 `json:"cpu_pressure_pct,omitempty"`
	Seconds        float64  `json:"seconds"`
	// Backlog is the number of callbacks stored before the drain (-backlog);
	// FillPerSec is how fast they were stored, FirstDeliverySec how long
	// after the resume the first arrived. In a drain, DeliveredPerSec is
	// counted from the first delivery to the last, as hookrelay bench's
	// backlog-drain phase does.
	Backlog          int64    `json:"backlog,omitempty"`
	FillPerSec       float64  `json:"fill_per_s,omitempty"`
	FirstDeliverySec *float64 `json:"first_delivery_s,omitempty"`
	// Claim is the relay's claims (modes pg and pg-history).
	Claim *claimSummary `json:"claim,omitempty"`
}

// cpuSnapshot is the CPU ticks of the three parties at one moment.
type cpuSnapshot struct {
	at                    time.Time
	relay, postgres, self int64
	pressure              time.Duration // the machine's CPU pressure; -1 unknown
}

func takeCPU(relayPID int) (cpuSnapshot, error) {
	s := cpuSnapshot{at: time.Now(), pressure: -1}
	if p, err := load.CPUPressure(); err == nil {
		s.pressure = p
	}
	var err error
	if s.relay, err = load.ProcCPU(relayPID, false); err != nil {
		return s, fmt.Errorf("relay cpu: %w", err)
	}
	if s.postgres, err = load.PostgresCPU(0); err != nil {
		return s, fmt.Errorf("postgres cpu: %w", err)
	}
	if s.self, err = load.ProcCPU(os.Getpid(), false); err != nil {
		return s, fmt.Errorf("own cpu: %w", err)
	}
	return s, nil
}

// runMeasure starts the sink and the relay child (this executable, argument
// "relay"), drives the load, waits for the deliveries and returns the result.
func runMeasure(ctx context.Context, args []string) (result, error) {
	var r result
	o, err := parseOptions(args)
	if err != nil {
		return r, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sink, err := load.StartSink(load.SinkConfig{})
	if err != nil {
		return r, err
	}
	defer sink.Close()
	if err := sink.SetSecret(0, "whsec_"+base64.StdEncoding.EncodeToString(key)); err != nil {
		return r, err
	}
	ledger := load.NewLedger(10_000, func(int) []int { return []int{0} })
	sink.SetLedger(1, ledger)

	dataDir, err := os.MkdirTemp("", "floor-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dataDir)
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	relayCtx, stopRelay := context.WithCancel(ctx)
	defer stopRelay()
	cmd := exec.CommandContext(relayCtx, self, "relay")
	cmd.Env = append(os.Environ(), envMode+"="+o.mode, envDB+"="+o.databaseURL, envSink+"="+sink.URL(),
		envKey+"="+base64.StdEncoding.EncodeToString(key), envWorkers+"="+strconv.Itoa(o.workers), envData+"="+dataDir,
		envBatch+"="+strconv.Itoa(o.batch), envRate+"="+strconv.FormatFloat(o.drainRate, 'f', -1, 64))
	if o.backlog > 0 {
		cmd.Env = append(cmd.Env, envPaused+"=1")
	}
	cmd.Stderr = os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() { stopRelay(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		return r, fmt.Errorf("relay printed no address: %v", lines.Err())
	}
	relayURL := "http://" + lines.Text()

	client := &http.Client{Transport: &http.Transport{MaxIdleConns: o.concurrency * 2, MaxIdleConnsPerHost: o.concurrency * 2}}
	defer client.CloseIdleConnections()
	cfg := load.LoadConfig{
		BaseURL: relayURL, CarrierKey: "floor", Phase: 1, Keys: 10_000,
		MerchantOf: func(int) string { return "m" }, LargeFraction: o.large,
		Rate: o.rate, Duration: o.duration, Concurrency: o.concurrency, Client: client, Ledger: ledger,
	}
	var resumedAt time.Time
	if o.backlog > 0 {
		// Fill with dispatch paused, then measure from the resume.
		cfg.Rate, cfg.Duration, cfg.MaxAcked = 0, 0, o.backlog
		fill, err := load.RunLoad(ctx, cfg)
		if err != nil {
			return r, err
		}
		if fill.Acked < o.backlog {
			return r, fmt.Errorf("backlog: %d of %d callbacks stored (statuses %v, errors %v)", fill.Acked, o.backlog, fill.Statuses, fill.Errors)
		}
		r.Backlog, r.FillPerSec = fill.Acked, round(float64(fill.Acked)/fill.Elapsed().Seconds())
	}
	start, err := takeCPU(cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	var res *load.LoadResult
	if o.backlog > 0 {
		resumedAt = time.Now()
		if err := relayCall(ctx, client, http.MethodPost, relayURL+"/floor/resume", nil); err != nil {
			return r, err
		}
	} else if res, err = load.RunLoad(ctx, cfg); err != nil {
		return r, err
	}
	// Wait for the deliveries of everything acknowledged (or 60 s of no progress).
	last, lastAt := int64(-1), time.Now()
	for {
		expected, delivered := ledger.Progress()
		if delivered >= expected || time.Since(lastAt) > 60*time.Second || ctx.Err() != nil {
			break
		}
		if delivered != last {
			last, lastAt = delivered, time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	end, err := takeCPU(cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	acc := ledger.Analyze()
	r.Mode, r.Callbacks, r.Delivered = o.mode, acc.Acknowledged, acc.Delivered
	r.Lost, r.Duplicates, r.OrderViolations = acc.Lost, acc.Duplicates, acc.OrderViolations
	r.LoadAvg1m = load.LoadAvg1m()
	r.CPUPressurePct = load.PressurePct(start.pressure, end.pressure, end.at.Sub(start.at))
	if o.mode != "http" {
		var c claimSummary
		if err := relayCall(ctx, client, http.MethodGet, relayURL+"/floor/claims", &c); err != nil {
			return r, err
		}
		r.Claim = &c
	}
	if acc.Delivered == 0 {
		if res == nil {
			return r, fmt.Errorf("nothing delivered of a backlog of %d", r.Backlog)
		}
		return r, fmt.Errorf("nothing delivered (load: %d sent, statuses %v, errors %v)", res.Sent, res.Statuses, res.Errors)
	}
	elapsed := end.at.Sub(start.at).Seconds()
	r.Seconds = round(elapsed)
	r.DeliveredPerSec = round(float64(acc.Delivered) / elapsed)
	if res != nil {
		r.IngestPerSec = round(float64(acc.Acknowledged) / res.Elapsed().Seconds())
	} else {
		first, last := ledger.FirstDelivery(), ledger.LastDelivery()
		if last.After(first) {
			r.DeliveredPerSec = round(float64(acc.Delivered) / last.Sub(first).Seconds())
		}
		s := round(first.Sub(resumedAt).Seconds())
		r.FirstDeliverySec = &s
	}
	perCB := func(ticks int64) float64 {
		return round(float64(load.TicksToDuration(ticks).Microseconds()) / 1e3 / float64(acc.Delivered))
	}
	r.RelayCPUms = perCB(end.relay - start.relay)
	r.PostgresCPUms = perCB(end.postgres - start.postgres)
	r.RelayPlusPGms = perCB(end.relay - start.relay + end.postgres - start.postgres)
	r.BenchCPUms = perCB(end.self - start.self)
	slices.Sort(acc.Latencies)
	r.E2EP50ms = quantileMS(acc.Latencies, 0.50)
	r.E2EP99ms = quantileMS(acc.Latencies, 0.99)
	return r, nil
}

// relayCall sends a bodiless request to the relay child and decodes a JSON
// answer into out, if out is not nil.
func relayCall(ctx context.Context, client *http.Client, method, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d", method, url, resp.StatusCode)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func quantileMS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)
	return round(float64(sorted[max(i, 0)].Microseconds()) / 1e3)
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }
