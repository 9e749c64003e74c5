package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookrelay/hookrelay/bench/load"
)

// floodOptions are the flags of the refusal-flood phase: valid callbacks
// from a few carriers, without and then beside one carrier whose callbacks
// are all refused.
type floodOptions struct {
	rate     float64
	carriers int
	conns    int
	kind     string
	limit    float64
	alone    bool
}

func addFloodFlags(fs *flag.FlagSet) *floodOptions {
	f := &floodOptions{}
	fs.Float64Var(&f.rate, "flood-valid-rate", 1000, "refusal-flood: valid callbacks per second, spread over --flood-carriers carriers")
	fs.IntVar(&f.carriers, "flood-carriers", 4, "refusal-flood: carriers sending the valid callbacks")
	fs.IntVar(&f.conns, "flood-conns", 64, "refusal-flood: connections of the flooding carrier, each sending its next refused callback as soon as the last is answered")
	fs.StringVar(&f.kind, "flood-kind", "json", "refusal-flood: what the flood sends: json (malformed JSON: 400) or signature (a wrong X-Signature: 401)")
	fs.Float64Var(&f.limit, "flood-rate", 0, "refusal-flood: refused callbacks per second at most (0: as fast as the connections go)")
	fs.BoolVar(&f.alone, "flood-alone", true, "refusal-flood: a third run of the flood without valid callbacks, for the CPU per refusal")
	return f
}

func (f *floodOptions) check() error {
	switch {
	case f.rate <= 0 || f.carriers < 1 || f.conns < 1 || f.limit < 0:
		return fmt.Errorf("%w: --flood-valid-rate must be positive, --flood-carriers and --flood-conns at least 1, --flood-rate 0 or more", errUsage)
	case f.kind != "json" && f.kind != "signature":
		return fmt.Errorf("%w: --flood-kind: unknown kind %q (want json, signature)", errUsage, f.kind)
	}
	return nil
}

// Counters read from the service's /metrics around each run of the phase.
const (
	refusalsLogged    = "hookrelay_carrier_refusals_logged_total"
	refusalsNotLogged = "hookrelay_carrier_refusals_not_logged_total"
	refusalsLost      = "hookrelay_carrier_refusals_lost_total"
	carrierCallbacks  = "hookrelay_carrier_callbacks_total"
)

// floodResult is a line of the refusal-flood phase: the valid carriers'
// figures (the common fields; the per-callback CPU counts the valid
// callbacks only, so with the flood it includes the refusals' cost) and the
// flood's.
type floodResult struct {
	load.Result
	ValidCarriers int    `json:"valid_carriers"`
	FloodKind     string `json:"flood_kind,omitempty"`
	FloodConns    int    `json:"flood_connections,omitempty"`
	// FloodSent and FloodRefused are the flood's requests answered and
	// those answered 4xx; FloodStatuses counts the answers by status
	// ("0": transport error).
	FloodSent          int64            `json:"flood_sent"`
	FloodRefused       int64            `json:"flood_refused"`
	FloodRefusedPerSec float64          `json:"flood_refusals_per_sec"`
	FloodStatuses      map[string]int64 `json:"flood_statuses,omitempty"`
	FloodAnswerP50ms   *float64         `json:"flood_answer_p50_ms,omitempty"`
	FloodAnswerP99ms   *float64         `json:"flood_answer_p99_ms,omitempty"`
	// ServiceCountedRefusals is the flooding carrier's refusals the service
	// counted (hookrelay_carrier_callbacks_total).
	ServiceCountedRefusals float64 `json:"service_counted_refusals"`
	// RefusalLogRows is the rows written to the refusal log during the
	// run (refusals with their excerpts, and one count row per carrier,
	// reason and minute of those beyond the caps, written once that minute
	// is past); NotLogged the refusals beyond the caps, counted not
	// stored; LogLost rows the database refused.
	RefusalLogRows     float64 `json:"refusal_log_rows_written"`
	RefusalsNotLogged  float64 `json:"refusals_not_logged"`
	RefusalLogRowsLost float64 `json:"refusal_log_rows_lost"`
	// ServiceCPUmsRefusal and PostgresCPUmsRefusal are, in the run of the
	// flood alone, CPU milliseconds per refusal (the service's and
	// PostgreSQL's background work included).
	ServiceCPUmsRefusal  *float64 `json:"service_cpu_ms_per_refusal,omitempty"`
	PostgresCPUmsRefusal *float64 `json:"postgres_cpu_ms_per_refusal,omitempty"`
	// The flood run against the run without it: the valid carriers' 202
	// p99 and delivery (e2e) p99, flood / no flood.
	AckP99Ratio *float64 `json:"ack_p99_ratio,omitempty"`
	E2EP99Ratio *float64 `json:"e2e_p99_ratio,omitempty"`
}

// refusalFloodPhase runs the valid carriers' traffic for --duration twice:
// alone (refusal-flood-off), then beside the flood (refusal-flood-on), and
// prints a line for each.
func (b *benchRun) refusalFloodPhase(ctx context.Context) error {
	f := b.opts.flood
	admin := &load.Admin{BaseURL: b.baseURL, Token: b.adminToken, Client: b.client}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	keys := make([]string, f.carriers)
	for i := range keys {
		c, err := admin.CreateCarrier(ctx, fmt.Sprintf("flood-valid-%d-%s", i, suffix))
		if err != nil {
			return fmt.Errorf("refusal-flood: register carrier: %w", err)
		}
		keys[i] = c.APIKey
	}
	var flooder load.Carrier
	var err error
	if f.kind == "signature" {
		flooder, err = admin.CreateSignedCarrier(ctx, "flood-refused-"+suffix, "bench-flood-secret-"+suffix)
	} else {
		flooder, err = admin.CreateCarrier(ctx, "flood-refused-"+suffix)
	}
	if err != nil {
		return fmt.Errorf("refusal-flood: register carrier: %w", err)
	}
	off, err := b.floodRun(ctx, "refusal-flood-off", keys, nil)
	if err != nil {
		return err
	}
	if err := b.printFlood(off); err != nil {
		return err
	}
	on, err := b.floodRun(ctx, "refusal-flood-on", keys, &flooder)
	if err != nil {
		return err
	}
	if off.AckP99ms != nil && on.AckP99ms != nil && *off.AckP99ms > 0 {
		on.AckP99Ratio = load.Float(*on.AckP99ms / *off.AckP99ms)
	}
	if off.E2EP99ms != nil && on.E2EP99ms != nil && *off.E2EP99ms > 0 {
		on.E2EP99Ratio = load.Float(*on.E2EP99ms / *off.E2EP99ms)
	}
	if err := b.printFlood(on); err != nil {
		return err
	}
	if !f.alone {
		return nil
	}
	alone, err := b.floodRun(ctx, "refusal-flood-alone", nil, &flooder)
	if err != nil {
		return err
	}
	if alone.FloodRefused > 0 {
		n := float64(alone.FloodRefused)
		alone.ServiceCPUmsRefusal = load.Float(alone.ServiceCPUSec * 1e3 / n)
		alone.PostgresCPUmsRefusal = load.Float(alone.PostgresCPUSec * 1e3 / n)
	}
	return b.printFlood(alone)
}

func (b *benchRun) printFlood(r floodResult) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(b.stdout, "%s\n", raw)
	return err
}

// floodRun is one run of the phase: the valid load for --duration, with the
// flood of flooder beside it when flooder is not nil.
func (b *benchRun) floodRun(ctx context.Context, name string, keys []string, flooder *load.Carrier) (floodResult, error) {
	o, f := b.opts, b.opts.flood
	phase, l := b.newLedger()
	cfg := b.loadConfig(phase, l)
	cfg.Duration, cfg.Rate = o.duration, f.rate
	cfg.CarrierKeyOf = func(key int) string { return keys[key%max(len(keys), 1)] }
	// Open loop: enough requests in flight that the valid carriers keep
	// their rate while answers slow down (half a second each at most),
	// on connections kept for reuse.
	cfg.Concurrency = max(o.concurrency, int(f.rate/2))
	cfg.Client = newBenchClient(cfg.Concurrency)
	defer cfg.Client.CloseIdleConnections()
	b.resetStatements(ctx)
	match := []string(nil)
	if flooder != nil {
		match = []string{`carrier="` + flooder.ID + `"`}
	}
	countersBefore := b.refusalCounters(ctx, match)
	start := b.take(ctx)
	switch {
	case len(keys) == 0:
		fmt.Fprintf(b.stderr, "bench: phase %s: a flood of refused callbacks (%s) from %d connections for %s, no valid callbacks\n", name, f.kind, f.conns, o.duration)
	case flooder != nil:
		fmt.Fprintf(b.stderr, "bench: phase %s: %.0f/s valid callbacks from %d carriers for %s beside a flood of refused callbacks (%s) from %d connections\n",
			name, f.rate, len(keys), o.duration, f.kind, f.conns)
	default:
		fmt.Fprintf(b.stderr, "bench: phase %s: %.0f/s valid callbacks from %d carriers for %s, no flood\n", name, f.rate, len(keys), o.duration)
	}
	var fl *floodLoad
	floodCtx, stopFlood := context.WithCancel(ctx)
	defer stopFlood()
	if flooder != nil {
		fl = startFlood(floodCtx, b.baseURL, flooder.APIKey, f, o.smallBytes)
	}
	var res *load.LoadResult
	var err error
	if len(keys) > 0 {
		res, err = load.RunLoad(ctx, cfg)
	} else {
		res, err = idleFor(ctx, o.duration)
	}
	stopFlood()
	if fl != nil {
		fl.wait()
	}
	if err != nil {
		return floodResult{}, err
	}
	b.awaitDrain(ctx, l)
	end := b.take(ctx)
	countersAfter := b.refusalCounters(ctx, match)
	if err := b.checkAlive(); err != nil {
		return floodResult{}, err
	}
	r := floodResult{Result: b.result(name, res, l, start, end), ValidCarriers: len(keys)}
	if len(keys) == 0 { // no callbacks to divide by: the per-refusal figures instead
		r.ServiceCPUms, r.PostgresCPUms, r.BenchCPUms = nil, nil, nil
	}
	if len(keys) > 0 {
		r.OfferedPerSec = f.rate
	}
	if first := res.Start; !l.LastDelivery().IsZero() {
		r.DeliveredPerSec = round2(float64(r.Delivered) / l.LastDelivery().Sub(first).Seconds())
	}
	r.RefusalLogRows = countersAfter[refusalsLogged] - countersBefore[refusalsLogged]
	r.RefusalsNotLogged = countersAfter[refusalsNotLogged] - countersBefore[refusalsNotLogged]
	r.RefusalLogRowsLost = countersAfter[refusalsLost] - countersBefore[refusalsLost]
	if fl != nil {
		r.FloodKind, r.FloodConns = f.kind, f.conns
		fl.fill(&r)
		fmt.Fprintf(b.stderr, "bench: %s: flood answers %v, e.g. %q\n", name, r.FloodStatuses, fl.example)
		// The flooder's every answer is a refusal: its callbacks counted
		// less the accepted (none).
		r.ServiceCountedRefusals = countersAfter[carrierCallbacks] - countersBefore[carrierCallbacks]
	}
	b.topStatements(ctx, name, r.Acknowledged)
	return r, nil
}

// refusalCounters samples the refusal log's counters of the service process
// and, with match, the callbacks it counted of the carrier match names.
func (b *benchRun) refusalCounters(ctx context.Context, match []string) map[string]float64 {
	out, err := load.ScrapeCounters(ctx, b.client, b.baseURL+"/metrics", nil, refusalsLogged, refusalsNotLogged, refusalsLost)
	if err != nil {
		fmt.Fprintf(b.stderr, "bench: %v\n", err)
		return map[string]float64{}
	}
	if match != nil {
		cb, err := load.ScrapeCounters(ctx, b.client, b.baseURL+"/metrics", match, carrierCallbacks)
		if err != nil {
			fmt.Fprintf(b.stderr, "bench: %v\n", err)
		} else {
			out[carrierCallbacks] = cb[carrierCallbacks]
		}
	}
	return out
}

// floodLoad is the flooding carrier's connections at work.
type floodLoad struct {
	wg       sync.WaitGroup
	start    time.Time
	end      atomic.Int64 // unix nanos of the last answer
	sent     atomic.Int64
	refused  atomic.Int64
	mu       sync.Mutex // guards statuses and took
	statuses map[int]int64
	took     []time.Duration
	example  string
}

// floodBody returns the flood's body: for json, about size bytes of a JSON
// object left unterminated (the parser reads it all before it fails); for
// signature, a well-formed callback (its signature is what is wrong).
func floodBody(kind string, size int) []byte {
	b := []byte(`{"tracking_no":"FLOOD-1","merchant_id":"0","status":"in_transit","pad":"`)
	if n := size - len(b) - 2; n > 0 {
		b = append(b, bytes.Repeat([]byte("x"), n)...)
	}
	if kind == "signature" {
		b = append(b, `"}`...)
	} else {
		b = append(b, `",`...)
	}
	return b
}

// startFlood starts conns workers, each with a connection of its own,
// sending the flood's refused callbacks back to back (or at --flood-rate in
// all) until ctx ends.
func startFlood(ctx context.Context, baseURL, apiKey string, f *floodOptions, size int) *floodLoad {
	fl := &floodLoad{start: time.Now(), statuses: map[int]int64{}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxConnsPerHost, t.MaxIdleConnsPerHost, t.MaxIdleConns = f.conns, f.conns, f.conns
	client := &http.Client{Transport: t, Timeout: 60 * time.Second}
	body := floodBody(f.kind, size)
	url := strings.TrimRight(baseURL, "/") + "/v1/callbacks"
	var tokens chan struct{}
	if f.limit > 0 {
		tokens = make(chan struct{}, f.conns)
		go paceFlood(ctx, tokens, f.limit) // owned: ends with ctx
	}
	for range f.conns {
		fl.wg.Add(1)
		go func() {
			defer fl.wg.Done()
			for ctx.Err() == nil {
				if tokens != nil {
					select {
					case <-ctx.Done():
						return
					case <-tokens:
					}
				}
				fl.sendOne(client, url, apiKey, f.kind, body)
			}
		}()
	}
	go func() { // owned: ends when the workers have
		fl.wg.Wait()
		client.CloseIdleConnections()
	}()
	return fl
}

func (fl *floodLoad) sendOne(client *http.Client, url, apiKey, kind string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fl.count(0, 0, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if kind == "signature" {
		req.Header.Set("X-Signature", "sha256="+strings.Repeat("0", 64))
	}
	sent := time.Now()
	resp, err := client.Do(req)
	took := time.Since(sent)
	if err != nil {
		fl.count(0, took, err.Error())
		return
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	fl.count(resp.StatusCode, took, string(bytes.TrimSpace(msg)))
}

func (fl *floodLoad) count(status int, took time.Duration, msg string) {
	fl.sent.Add(1)
	if status >= 400 && status < 500 {
		fl.refused.Add(1)
	}
	fl.end.Store(time.Now().UnixNano())
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.statuses[status]++
	if status != 0 {
		fl.took = append(fl.took, took)
	}
	if fl.example == "" {
		fl.example = fmt.Sprintf("status %d: %s", status, msg)
	}
}

func (fl *floodLoad) wait() { fl.wg.Wait() }

// fill sets the flood's fields of r.
func (fl *floodLoad) fill(r *floodResult) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	r.FloodSent, r.FloodRefused = fl.sent.Load(), fl.refused.Load()
	if end := fl.end.Load(); end > 0 {
		r.FloodRefusedPerSec = round2(float64(r.FloodRefused) / time.Unix(0, end).Sub(fl.start).Seconds())
	}
	r.FloodStatuses = map[string]int64{}
	for st, n := range fl.statuses {
		r.FloodStatuses[strconv.Itoa(st)] = n
	}
	sorted := slices.Sorted(slices.Values(fl.took))
	r.FloodAnswerP50ms, r.FloodAnswerP99ms = load.Percentile(sorted, 0.5), load.Percentile(sorted, 0.99)
}

// idleFor waits d (or until ctx ends): the run of the flood alone has no
// valid load, only its length.
func idleFor(ctx context.Context, d time.Duration) (*load.LoadResult, error) {
	res := &load.LoadResult{Statuses: map[int]int64{}, Start: time.Now()}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	res.End = time.Now()
	return res, nil
}

// paceFlood sends rate tokens a second until ctx ends, catching up after
// oversleeping (a ticker drops the ticks of a busy machine).
func paceFlood(ctx context.Context, tokens chan<- struct{}, rate float64) {
	start, interval := time.Now(), time.Duration(float64(time.Second)/rate)
	for i := int64(0); ; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > time.Millisecond {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case tokens <- struct{}{}:
		}
	}
}
