package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/bench/load"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/keyring"
)

// benchOptions are the flags of hookrelay-bench (docs/benchmarks.md).
type benchOptions struct {
	phases         string
	duration       time.Duration
	rates          []float64
	keys           int
	smallBytes     int
	largeBytes     int
	largeFraction  float64
	merchants      int
	endpointsPer   int
	concurrency    int
	sinkLatency    time.Duration
	sinkFailure    float64
	retrySchedule  string
	maxInFlight    int
	backlog        int
	drainTimeout   time.Duration
	dispatchers    int
	target         string
	adminToken     string
	metricsURLs    string
	servicePIDs    string
	databaseURL    string
	pgTop          int
	keepDB         bool
	hookrelay      string
	serviceEnv     stringList
	warmup         time.Duration
	settleInterval time.Duration
	latencyLog     string
	flood          *floodOptions
	flaky          *flakyOptions
	fair           fairOptions
	pull           pullOptions
	day            dayOptions
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func parseBenchFlags(args []string, stderr io.Writer) (*benchOptions, error) {
	o := &benchOptions{}
	fs := flag.NewFlagSet("hookrelay-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.phases, "phases", "max,rates,backlog", "phases to run, in order: max, rates, day, backlog, flaky, burst, many-endpoints, slow-tenant, refusal-flood, pull-idle, pull-drain, idle")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "load time of the max-rate and of each fixed-rate phase")
	rates := fs.String("rates", "1000,2000", "fixed-rate phases, callbacks per second, comma-separated")
	fs.IntVar(&o.keys, "keys", 10000, "tracking numbers (ordering keys)")
	fs.IntVar(&o.smallBytes, "small-bytes", 1200, "size of an ordinary callback")
	fs.IntVar(&o.largeBytes, "large-bytes", 30000, "size of a large callback")
	fs.Float64Var(&o.largeFraction, "large-fraction", 0.05, "share of large callbacks (0..1)")
	fs.IntVar(&o.merchants, "merchants", 10, "merchants; each key routes to one of them (each endpoint allows max_in_flight deliveries at once)")
	fs.IntVar(&o.endpointsPer, "endpoints-per-merchant", 1, "endpoints per merchant (fan-out of a callback)")
	fs.IntVar(&o.concurrency, "concurrency", 128, "carrier requests in flight at most")
	fs.DurationVar(&o.sinkLatency, "sink-latency", 0, "sink answer delay")
	fs.Float64Var(&o.sinkFailure, "sink-failure-rate", 0, "share of deliveries the sink answers 500 (0..1)")
	fs.StringVar(&o.retrySchedule, "retry-schedule", "", "endpoint retry_schedule, comma-separated durations (empty: service default)")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 0, "endpoint max_in_flight (0: service default)")
	fs.IntVar(&o.backlog, "backlog", 1000000, "deliveries to pile up with dispatch stopped, then drain (0 skips the phase)")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 60*time.Second, "how long to wait for outstanding deliveries after the load (backlog: after the last delivery progress)")
	fs.IntVar(&o.dispatchers, "dispatchers", 1, "dispatch-only processes to start; 0 runs every role in the one service process, as `hookrelay serve` does by default")
	fs.StringVar(&o.target, "target", "", "benchmark a running service at this URL instead of starting one")
	fs.StringVar(&o.adminToken, "admin-token", "", "admin token of --target")
	fs.StringVar(&o.metricsURLs, "metrics-urls", "", "with --target: comma-separated /metrics URLs of the dispatch processes (default: <target>/metrics)")
	fs.StringVar(&o.servicePIDs, "service-pids", "", "with --target: comma-separated pids of the service processes, for CPU accounting")
	fs.StringVar(&o.databaseURL, "database-url", "", "database for pg_stat sampling (default: the one the started service uses)")
	fs.IntVar(&o.pgTop, "pg-top", 0, "print the N most expensive statements of each phase to stderr (needs pg_stat_statements)")
	fs.BoolVar(&o.keepDB, "keep-db", false, "keep the benchmark database afterwards")
	fs.StringVar(&o.hookrelay, "hookrelay", "", "the hookrelay binary to start the service with (default: hookrelay beside this executable, else on PATH)")
	fs.Var(&o.serviceEnv, "service-env", "KEY=VALUE for the started service processes (repeatable)")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before the first phase")
	fs.StringVar(&o.latencyLog, "latency-log", "", "append one line per delivery (callback × endpoint) to this file: phase, the callback's request start (Unix µs), end-to-end latency (µs); for a timeline of the tail")
	o.flood = addFloodFlags(fs)
	o.flaky = addFlakyFlags(fs)
	addFairnessFlags(fs, &o.fair)
	addPullFlags(fs, &o.pull)
	addDayFlags(fs, &o.day)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	for _, r := range strings.Split(*rates, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		v, err := strconv.ParseFloat(r, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%w: --rates: bad rate %q", errUsage, r)
		}
		o.rates = append(o.rates, v)
	}
	switch {
	case o.keys < 1, o.merchants < 1, o.endpointsPer < 1, o.concurrency < 1:
		return nil, fmt.Errorf("%w: --keys, --merchants, --endpoints-per-merchant and --concurrency must be at least 1", errUsage)
	case o.dispatchers < 0:
		return nil, fmt.Errorf("%w: --dispatchers must be 0 or more", errUsage)
	case o.largeFraction < 0 || o.largeFraction > 1 || o.sinkFailure < 0 || o.sinkFailure >= 1:
		return nil, fmt.Errorf("%w: --large-fraction must be in [0,1] and --sink-failure-rate in [0,1)", errUsage)
	case o.target != "" && o.adminToken == "":
		return nil, fmt.Errorf("%w: --target needs --admin-token", errUsage)
	}
	for _, p := range strings.Split(o.phases, ",") {
		switch p = strings.TrimSpace(p); {
		case p == "max", p == "rates", p == "day", p == "backlog", p == "flaky", p == "idle", p == "refusal-flood", slices.Contains(fairPhaseNames, p), slices.Contains(pullPhaseNames, p):
		default:
			return nil, fmt.Errorf("%w: --phases: unknown phase %q (want max, rates, day, backlog, flaky, burst, many-endpoints, slow-tenant, refusal-flood, pull-idle, pull-drain, idle)", errUsage, p)
		}
	}
	if err := o.flood.check(); err != nil {
		return nil, err
	}
	if err := o.flaky.check(); err != nil {
		return nil, err
	}
	if err := o.day.check(); err != nil {
		return nil, err
	}
	o.settleInterval = 200 * time.Millisecond
	return o, nil
}

func (o *benchOptions) runs(phase string) bool {
	for _, p := range strings.Split(o.phases, ",") {
		if strings.TrimSpace(p) == phase {
			return true
		}
	}
	return false
}

// runBench is the benchmark: set up, run the phases, print one JSON line per
// phase on stdout; progress goes to stderr.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseBenchFlags(args, stderr)
	if err != nil {
		return err
	}
	b := &benchRun{opts: o, stdout: stdout, stderr: stderr, client: newBenchClient(o.concurrency)}
	defer b.client.CloseIdleConnections()
	err = b.setUp(ctx, getenv)
	if err == nil {
		err = b.runPhases(ctx)
	}
	b.close(err != nil)
	return err
}

func newBenchClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conns * 2
	t.MaxIdleConnsPerHost = conns * 2
	t.MaxConnsPerHost = 0
	return &http.Client{Transport: t, Timeout: 60 * time.Second}
}

// benchDatabaseURL returns the server of DATABASE_URL (or the local default)
// with a fresh database name.
func benchDatabaseURL(getenv func(string) string) (string, error) {
	raw := getenv("DATABASE_URL")
	if raw == "" {
		raw = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = fmt.Sprintf("/hookrelay_bench_%d_%d", time.Now().Unix(), os.Getpid())
	q := u.Query()
	if q.Get("sslmode") == "" {
		q.Set("sslmode", "disable")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// setUp starts (or finds) the service, the sink, the stats sampler, and
// registers the carrier, merchants and endpoints.
func (b *benchRun) setUp(ctx context.Context, getenv func(string) string) error {
	o := b.opts
	sink, err := load.StartSink(load.SinkConfig{Latency: o.sinkLatency, FailureRate: o.sinkFailure})
	if err != nil {
		return err
	}
	b.sink = sink
	if o.target != "" {
		b.baseURL, b.adminToken = strings.TrimRight(o.target, "/"), o.adminToken
		b.metricsURLs = splitList(o.metricsURLs)
		if len(b.metricsURLs) == 0 {
			b.metricsURLs = []string{b.baseURL + "/metrics"}
		}
		for _, p := range splitList(o.servicePIDs) {
			pid, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("%w: --service-pids: %q", errUsage, p)
			}
			b.targetPIDs = append(b.targetPIDs, pid)
		}
		b.dbURL = o.databaseURL
	} else if err := b.startServices(ctx, getenv); err != nil {
		return err
	}
	if b.dbURL != "" {
		st, err := load.OpenPGStats(ctx, b.dbURL)
		if err != nil {
			fmt.Fprintf(b.stderr, "bench: no PostgreSQL statistics: %v\n", err)
		} else {
			b.pg = st
			if !st.HasStatements() {
				fmt.Fprintln(b.stderr, "bench: pg_stat_statements unavailable (needs shared_preload_libraries); statements_per_callback omitted")
			}
		}
	}
	return b.register(ctx)
}

// startServices creates the database and starts the api/web/maintenance
// process and the dispatch processes.
func (b *benchRun) startServices(ctx context.Context, getenv func(string) string) error {
	o := b.opts
	dbURL, err := benchDatabaseURL(getenv)
	if err != nil {
		return err
	}
	if err := db.EnsureDatabase(ctx, dbURL); err != nil {
		return fmt.Errorf("create benchmark database: %w", err)
	}
	b.dbURL, b.createdDB = dbURL, dbURL
	if o.databaseURL != "" {
		b.dbURL = o.databaseURL
	}
	dir, err := os.MkdirTemp("", "hookrelay-bench-")
	if err != nil {
		return err
	}
	b.tempDir = dir
	b.adminToken = hookrelay.NewKey(hookrelay.AdminTokenPrefix)
	env := map[string]string{
		"DATABASE_URL":                    dbURL,
		"HOOKRELAY_ADDR":                  "127.0.0.1:0",
		"HOOKRELAY_S3_EMBED_ADDR":         "127.0.0.1:0",
		"HOOKRELAY_DATA_DIR":              dir,
		"HOOKRELAY_ADMIN_TOKEN":           b.adminToken,
		"HOOKRELAY_ENCRYPTION_KEY":        keyring.Generate(),
		"HOOKRELAY_LOG_FORMAT":            "json",
		"HOOKRELAY_ALLOW_PRIVATE_TARGETS": "true",
	}
	for _, kv := range o.serviceEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%w: --service-env %q: want KEY=VALUE", errUsage, kv)
		}
		env[k] = v
	}
	bin, err := findHookrelay(o.hookrelay, getenv)
	if err != nil {
		return err
	}
	b.launcher = &benchLauncher{bin: bin, env: env, logDir: dir}
	if err := b.startAPI(ctx, o.dispatchers == 0); err != nil {
		return err
	}
	fmt.Fprintf(b.stderr, "bench: service at %s (logs and data in %s)\n", b.api.url, dir)
	return b.startDispatchers(ctx)
}

// startAPI starts the service process: api, web and maintenance, and
// dispatch too when withDispatch (--dispatchers 0).
func (b *benchRun) startAPI(ctx context.Context, withDispatch bool) error {
	roles := "api,web,maintenance"
	if withDispatch {
		roles += ",dispatch"
	}
	api, err := b.launcher.start(ctx, "api", roles, nil)
	if err != nil {
		return err
	}
	b.api, b.baseURL = api, api.url
	return nil
}

// restartAPI stops the service process and starts it again, with or
// without the dispatch role (the backlog phase of --dispatchers 0). The
// embedded S3 store's data directory carries over.
func (b *benchRun) restartAPI(ctx context.Context, withDispatch bool) error {
	if err := b.api.stop(); err != nil {
		return fmt.Errorf("stop service: %w", err)
	}
	b.api = nil
	return b.startAPI(ctx, withDispatch)
}

// startDispatchers starts the dispatch-only processes; they use the api
// process's embedded S3 store. With --dispatchers 0 the service process
// dispatches and its /metrics has the dispatch histograms.
func (b *benchRun) startDispatchers(ctx context.Context) error {
	if b.opts.dispatchers == 0 {
		b.metricsURLs = []string{b.api.url + "/metrics"}
		return nil
	}
	extra := map[string]string{}
	if b.api.s3URL != "" {
		extra["HOOKRELAY_S3_ENDPOINT"] = b.api.s3URL
		extra["AWS_ACCESS_KEY_ID"] = "hookrelay"
		extra["AWS_SECRET_ACCESS_KEY"] = "hookrelay-embedded"
	}
	b.metricsURLs = nil
	for i := range b.opts.dispatchers {
		d, err := b.launcher.start(ctx, fmt.Sprintf("dispatch-%d", i), "dispatch", extra)
		if err != nil {
			return err
		}
		b.dispatch = append(b.dispatch, d)
		b.metricsURLs = append(b.metricsURLs, d.url+"/metrics")
	}
	return nil
}

// stopDispatchers stops the dispatch processes (backlog fill).
func (b *benchRun) stopDispatchers() error {
	var first error
	for _, d := range b.dispatch {
		if err := d.stop(); err != nil && first == nil {
			first = fmt.Errorf("stop dispatcher: %w", err)
		}
	}
	b.dispatch, b.metricsURLs = nil, nil
	return first
}

// register creates the carrier, merchants and endpoints pointing at the sink.
func (b *benchRun) register(ctx context.Context) error {
	o := b.opts
	admin := &load.Admin{BaseURL: b.baseURL, Token: b.adminToken, Client: b.client}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	c, err := admin.CreateCarrier(ctx, "bench-carrier-"+suffix)
	if err != nil {
		return fmt.Errorf("register carrier: %w", err)
	}
	b.carrierKey = c.APIKey
	var schedule []string
	if o.retrySchedule != "" {
		schedule = splitList(o.retrySchedule)
	}
	for m := range o.merchants {
		mer, err := admin.CreateMerchant(ctx, fmt.Sprintf("bench-merchant-%d-%s", m, suffix))
		if err != nil {
			return fmt.Errorf("register merchant: %w", err)
		}
		b.merchantIDs = append(b.merchantIDs, mer.ID)
		for e := range o.endpointsPer {
			n := m*o.endpointsPer + e
			ep, err := admin.CreateEndpoint(ctx, mer.ID, b.sink.EndpointURL(n), schedule, o.maxInFlight)
			if err != nil {
				return fmt.Errorf("register endpoint: %w", err)
			}
			b.endpointIDs = append(b.endpointIDs, ep.ID)
			if err := b.sink.SetSecret(n, ep.Secret); err != nil {
				return err
			}
		}
	}
	return nil
}

// close stops everything the run started; after a failure the service logs
// stay in the temporary directory.
func (b *benchRun) close(failed bool) {
	_ = b.stopDispatchers()
	if b.api != nil {
		if err := b.api.stop(); err != nil {
			fmt.Fprintf(b.stderr, "bench: service exited: %v\n", err)
		}
	}
	if b.pg != nil {
		b.pg.Close()
	}
	if b.createdDB != "" && !b.opts.keepDB {
		if err := load.DropDatabase(context.Background(), b.createdDB); err != nil {
			fmt.Fprintf(b.stderr, "bench: drop database: %v\n", err)
		}
	}
	if b.sink != nil {
		_ = b.sink.Close()
	}
	if b.tempDir != "" && !b.opts.keepDB && !failed {
		_ = os.RemoveAll(b.tempDir)
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// printResult writes one phase as one JSON line.
func (b *benchRun) printResult(r load.Result) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(b.stdout, "%s\n", raw)
	return err
}
