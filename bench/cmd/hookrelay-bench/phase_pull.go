package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookrelay/hookrelay/bench/load"
)

// pullPhaseNames are the pull delivery phases (docs/benchmarks.md, "Pull
// delivery"): pull-idle measures the service's CPU while --pull-idle
// long-polls wait on an endpoint that gets nothing, against the same window
// with none; pull-drain piles up --pull-backlog events for a poll endpoint
// and drains them with one consumer pulling limit=500 and acknowledging.
var pullPhaseNames = []string{"pull-idle", "pull-drain"}

type pullOptions struct {
	idle       int
	idleWindow time.Duration
	backlog    int64
	limit      int
}

func addPullFlags(fs *flag.FlagSet, o *pullOptions) {
	fs.IntVar(&o.idle, "pull-idle", 1000, "pull-idle: long-polls (wait=30s) waiting at once")
	fs.DurationVar(&o.idleWindow, "pull-idle-window", 30*time.Second, "pull-idle: CPU measuring window, with and without the long-polls")
	fs.Int64Var(&o.backlog, "pull-backlog", 200000, "pull-drain: events piled up for one poll endpoint, then pulled")
	fs.IntVar(&o.limit, "pull-limit", 500, "pull-drain: limit of each pull (1-500)")
}

// pullResult is the JSON line of a pull phase.
type pullResult struct {
	Phase string `json:"phase"`
	// pull-idle
	Waiting         int      `json:"waiting_pulls,omitempty"`
	WindowSec       float64  `json:"window_sec,omitempty"`
	IdleCPUPct      *float64 `json:"service_cpu_pct_none_waiting,omitempty"`
	WaitingCPUPct   *float64 `json:"service_cpu_pct_waiting,omitempty"`
	WaitingPGCPUPct *float64 `json:"postgres_cpu_pct_waiting,omitempty"`
	IdlePGCPUPct    *float64 `json:"postgres_cpu_pct_none_waiting,omitempty"`
	PullsAnswered   int64    `json:"pulls_answered,omitempty"`
	Events          int64    `json:"events,omitempty"`
	FillPerSec      float64  `json:"fill_callbacks_per_sec,omitempty"`
	DrainSec        float64  `json:"drain_sec,omitempty"`
	EventsPerSec    float64  `json:"events_per_sec,omitempty"`
	Pulls           int64    `json:"pulls,omitempty"`
	ServiceCPUSec   float64  `json:"service_cpu_sec,omitempty"`
	ServiceCPUus    float64  `json:"service_cpu_us_per_event,omitempty"`
	PostgresCPUSec  float64  `json:"postgres_cpu_sec,omitempty"`
	PostgresCPUus   float64  `json:"postgres_cpu_us_per_event,omitempty"`
	BenchCPUSec     float64  `json:"bench_cpu_sec,omitempty"`
	LoadAvg1m       float64  `json:"load_avg_1m"`
	CPUPressurePct  *float64 `json:"cpu_pressure_pct,omitempty"`
}

// pollEndpoint creates a merchant with a poll endpoint and returns the
// endpoint's id, the merchant's id and its API key.
func (b *benchRun) pollEndpoint(ctx context.Context, name string) (endpointID, merchantID, key string, err error) {
	admin := &load.Admin{BaseURL: b.baseURL, Token: b.adminToken, Client: b.client}
	m, err := admin.CreateMerchant(ctx, name+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		return "", "", "", fmt.Errorf("register merchant: %w", err)
	}
	ep, err := admin.CreatePollEndpoint(ctx, m.ID)
	if err != nil {
		return "", "", "", fmt.Errorf("register poll endpoint: %w", err)
	}
	return ep.ID, m.ID, m.APIKey, nil
}

type pullPage struct {
	Items []struct {
		Cursor string `json:"cursor"`
	} `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// pull is one GET .../events; it returns the page.
func pull(ctx context.Context, c *http.Client, base, endpoint, key, cursor string, limit int, wait string) (pullPage, error) {
	u := fmt.Sprintf("%s/v1/endpoints/%s/events?limit=%d", base, endpoint, limit)
	if cursor != "" {
		u += "&cursor=" + cursor
	}
	if wait != "" {
		u += "&wait=" + wait
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return pullPage{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req)
	if err != nil {
		return pullPage{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return pullPage{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return pullPage{}, fmt.Errorf("pull: status %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	var p pullPage
	return p, json.Unmarshal(data, &p)
}

func ack(ctx context.Context, c *http.Client, base, endpoint, key, cursor string) error {
	body, _ := json.Marshal(map[string]string{"cursor": cursor})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/endpoints/"+endpoint+"/events/ack", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ack: status %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	return nil
}

// cpuPct is the share of one core the ticks between two samples are (nil:
// unknown).
func cpuPct(start, end int64, wall time.Duration) *float64 {
	if start < 0 || end < 0 {
		return nil
	}
	v := round2(100 * load.TicksToDuration(end-start).Seconds() / wall.Seconds())
	return &v
}

func (b *benchRun) runPullPhases(ctx context.Context) error {
	if b.opts.runs("pull-idle") {
		if err := b.pullIdlePhase(ctx); err != nil {
			return err
		}
	}
	if b.opts.runs("pull-drain") && b.opts.pull.backlog > 0 {
		if err := b.pullDrainPhase(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pullIdlePhase measures the service's CPU over --pull-idle-window with no
// pull waiting, then with --pull-idle long-polls (wait=30s, each asked again
// as soon as it answers) waiting on a poll endpoint that gets nothing.
func (b *benchRun) pullIdlePhase(ctx context.Context) error {
	o := b.opts.pull
	ep, _, key, err := b.pollEndpoint(ctx, "bench-pull-idle")
	if err != nil {
		return err
	}
	window := o.idleWindow
	fmt.Fprintf(b.stderr, "bench: phase pull-idle: %s with no pull waiting\n", window)
	s0 := b.take(ctx)
	sleepCtx(ctx, window)
	s1 := b.take(ctx)

	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.idle + 10, MaxConnsPerHost: 0}, Timeout: 60 * time.Second}
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var answered int64
	var firstErr error
	for range o.idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pctx.Err() == nil {
				_, err := pull(pctx, c, b.baseURL, ep, key, "", 1, "30s")
				mu.Lock()
				if err != nil && pctx.Err() == nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					answered++
				}
				mu.Unlock()
				if err != nil && pctx.Err() == nil {
					sleepCtx(pctx, time.Second)
				}
			}
		}()
	}
	// Wait until they all wait (the service's gauge), then measure.
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := load.ScrapeGauge(ctx, b.client, b.baseURL+"/metrics", "hookrelay_pull_waiting")
		if err == nil && int(v) >= o.idle {
			break
		}
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			return fmt.Errorf("pull-idle: %v of %d pulls waiting after 60 s (last error: %v, %v)", v, o.idle, err, firstErr)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	fmt.Fprintf(b.stderr, "bench: phase pull-idle: %s with %d pulls waiting\n", window, o.idle)
	mu.Lock()
	answered = 0
	mu.Unlock()
	s2 := b.take(ctx)
	sleepCtx(ctx, window)
	s3 := b.take(ctx)
	stop()
	wg.Wait()
	c.CloseIdleConnections()
	if firstErr != nil {
		fmt.Fprintf(b.stderr, "bench: pull-idle: a pull failed: %v\n", firstErr)
	}
	r := pullResult{Phase: "pull-idle", Waiting: o.idle, WindowSec: round2(window.Seconds()),
		IdleCPUPct:      cpuPct(s0.serviceCPU, s1.serviceCPU, s1.at.Sub(s0.at)),
		WaitingCPUPct:   cpuPct(s2.serviceCPU, s3.serviceCPU, s3.at.Sub(s2.at)),
		IdlePGCPUPct:    cpuPct(s0.postgresCPU, s1.postgresCPU, s1.at.Sub(s0.at)),
		WaitingPGCPUPct: cpuPct(s2.postgresCPU, s3.postgresCPU, s3.at.Sub(s2.at)),
		PullsAnswered:   answered, LoadAvg1m: load.LoadAvg1m(),
		BenchCPUSec:    round2(load.TicksToDuration(s3.benchCPU - s2.benchCPU).Seconds()),
		CPUPressurePct: load.PressurePct(s2.pressure, s3.pressure, s3.at.Sub(s2.at)),
	}
	return printJSON(b.stdout, r)
}

// pullDrainPhase piles up --pull-backlog events for one poll endpoint
// (callbacks as fast as they are taken) and drains them with one consumer:
// pull --pull-limit from the last cursor, acknowledge the page's
// next_cursor, until a pull finds nothing.
func (b *benchRun) pullDrainPhase(ctx context.Context) error {
	o := b.opts.pull
	ep, merchant, key, err := b.pollEndpoint(ctx, "bench-pull-drain")
	if err != nil {
		return err
	}
	phase, l := b.newLedger()
	cfg := b.loadConfig(phase, l)
	cfg.MerchantOf = func(int) string { return merchant }
	cfg.MaxAcked = o.backlog
	fmt.Fprintf(b.stderr, "bench: phase pull-drain: filling %d events for poll endpoint %s\n", o.backlog, ep)
	res, err := load.RunLoad(ctx, cfg)
	if err != nil {
		return err
	}
	fill := float64(res.Acked) / res.Elapsed().Seconds()
	fmt.Fprintf(b.stderr, "bench: backlog filled at %.0f callbacks/s; pulling limit=%d\n", fill, o.limit)
	// The ingest's fan-out is done when the last callback is acknowledged
	// (deliveries are written in its transaction).
	b.resetStatements(ctx)
	start := b.take(ctx)
	var events, pulls int64
	cursor := ""
	for {
		p, err := pull(ctx, b.client, b.baseURL, ep, key, cursor, o.limit, "")
		if err != nil {
			return err
		}
		pulls++
		if len(p.Items) == 0 {
			break
		}
		if err := ack(ctx, b.client, b.baseURL, ep, key, p.NextCursor); err != nil {
			return err
		}
		events += int64(len(p.Items))
		cursor = p.NextCursor
	}
	end := b.take(ctx)
	wall := end.at.Sub(start.at)
	ev := float64(max(events, 1))
	r := pullResult{Phase: "pull-drain", Events: events, FillPerSec: round2(fill), DrainSec: round2(wall.Seconds()),
		EventsPerSec: round2(float64(events) / wall.Seconds()), Pulls: pulls, LoadAvg1m: load.LoadAvg1m(),
		BenchCPUSec:    round2(load.TicksToDuration(end.benchCPU - start.benchCPU).Seconds()),
		CPUPressurePct: load.PressurePct(start.pressure, end.pressure, wall)}
	if start.serviceCPU >= 0 && end.serviceCPU >= 0 {
		d := load.TicksToDuration(end.serviceCPU - start.serviceCPU)
		r.ServiceCPUSec, r.ServiceCPUus = round2(d.Seconds()), round2(float64(d.Microseconds())/ev)
	}
	if start.postgresCPU >= 0 && end.postgresCPU >= 0 {
		d := load.TicksToDuration(end.postgresCPU - start.postgresCPU)
		r.PostgresCPUSec, r.PostgresCPUus = round2(d.Seconds()), round2(float64(d.Microseconds())/ev)
	}
	b.topStatements(ctx, "pull-drain", events)
	return printJSON(b.stdout, r)
}

func printJSON(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, strings.TrimSpace(string(raw)))
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
