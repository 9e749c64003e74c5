package load

import (
	"math"
	"slices"
	"time"
)

// Result is one phase of `hookrelay bench`, printed as one JSON line.
// Rates are per second of the phase; latencies in milliseconds; a value that
// could not be measured is null.
type Result struct {
	Phase           string   `json:"phase"`           // max-rate, rate-<n>, backlog-drain
	OfferedPerSec   float64  `json:"offered_per_sec"` // target pace (max-rate: what was sent)
	IngestPerSec    float64  `json:"ingest_per_sec"`  // acknowledged callbacks / load time
	DeliveredPerSec float64  `json:"delivered_per_sec"`
	E2EP50ms        *float64 `json:"e2e_p50_ms"`
	E2EP90ms        *float64 `json:"e2e_p90_ms"`
	E2EP99ms        *float64 `json:"e2e_p99_ms"`
	E2EMaxms        *float64 `json:"e2e_max_ms"`
	Sent            int64    `json:"sent"`
	Acknowledged    int64    `json:"acknowledged"`
	Delivered       int64    `json:"delivered"`
	Lost            int64    `json:"lost"`
	Duplicates      int64    `json:"duplicates"`
	OrderViolation  int64    `json:"order_violations"`
	// ServiceCPUms and PostgresCPUms are CPU milliseconds per acknowledged
	// callback, over the whole phase (load and drain).
	ServiceCPUms  *float64 `json:"service_cpu_ms_per_callback"`
	PostgresCPUms *float64 `json:"postgres_cpu_ms_per_callback"`
	ClaimP50ms    *float64 `json:"claim_p50_ms"`
	ClaimP99ms    *float64 `json:"claim_p99_ms"`
	// ClaimWaitP99ms is the p99 wait for a pool connection before a claim
	// (not part of ClaimP99ms).
	ClaimWaitP99ms *float64 `json:"claim_wait_p99_ms"`
	// ClaimServerP50ms and ClaimServerP99ms are PostgreSQL's own time of
	// the claims that leased rows: ClaimP99ms less this is waiting to run.
	ClaimServerP50ms *float64 `json:"claim_server_p50_ms"`
	ClaimServerP99ms *float64 `json:"claim_server_p99_ms"`

	// Extra detail, beyond the fields docs/benchmarks.md reports.
	AckP50ms *float64 `json:"ack_p50_ms"` // carrier request → 202
	AckP99ms *float64 `json:"ack_p99_ms"`
	// From the service's histograms (estimates within their buckets).
	IngestBatchP50    *float64 `json:"ingest_batch_p50"`     // callbacks per group commit
	IngestCommitP50ms *float64 `json:"ingest_commit_p50_ms"` // one group commit
	IngestCommitP99ms *float64 `json:"ingest_commit_p99_ms"`
	DeliveryHTTPP50ms *float64 `json:"delivery_http_p50_ms"` // one POST to the sink
	DeliveryHTTPP99ms *float64 `json:"delivery_http_p99_ms"`
	AckBatchP50       *float64 `json:"ack_batch_p50"` // results per acknowledgement statement
	// SchedLatencyP99ms is the p99 time the dispatch processes' runnable
	// goroutines waited for a CPU (Go's /sched/latencies): the part of the
	// claim and delivery latencies that is waiting to run, not work.
	SchedLatencyP99ms *float64         `json:"sched_latency_p99_ms"`
	DurationSec       float64          `json:"duration_s"` // load time
	DrainSec          float64          `json:"drain_s"`    // from the end of the load to the last delivery
	Fanout            int              `json:"deliveries_per_callback"`
	Rejected          map[string]int64 `json:"rejected,omitempty"`   // non-202 answers by status ("0" = transport error)
	Unexpected        int64            `json:"unexpected,omitempty"` // deliveries of never-acknowledged callbacks
	StatementsPerCB   *float64         `json:"statements_per_callback,omitempty"`
	CommitsPerCB      *float64         `json:"commits_per_callback,omitempty"`
	WALBytesPerCB     *float64         `json:"wal_bytes_per_callback,omitempty"`
	SinkBadSignatures int64            `json:"sink_bad_signatures"`
	ClaimCount        float64          `json:"claims"`
	BacklogDeliveries int64            `json:"backlog_deliveries,omitempty"`
	// FirstDeliverySec is, in the backlog phase, the time from starting
	// dispatch to the first delivery: delivered_per_sec and drain_s count
	// from that delivery, so a slow start shows here only.
	FirstDeliverySec *float64 `json:"first_delivery_s,omitempty"`
	ServiceCPUSec    float64  `json:"service_cpu_s"`
	PostgresCPUSec   float64  `json:"postgres_cpu_s"`
	BenchCPUSec      float64  `json:"bench_cpu_s"` // this process: load generator and sink
	// BenchCPUms is BenchCPUSec per callback, like ServiceCPUms. With the
	// service in processes of its own (not --in-process), the load
	// generator and sink do about the same work per callback of a phase
	// whatever the service does, so this gauges the machine: compare runs
	// on different machines by it.
	BenchCPUms *float64 `json:"bench_cpu_ms_per_callback"`
	LoadAvg1m  float64  `json:"loadavg_1m"` // /proc/loadavg at the end: other work on the machine shows here
	// CPUPressurePct is the share of the phase (between its two samples)
	// during which at least one task on the machine was runnable and
	// waiting for a CPU (Linux's /proc/pressure/cpu "some"); absent where
	// the kernel does not report it. A latency tail that grows with it is
	// the machine's queue for its cores, not the statements' work.
	CPUPressurePct *float64 `json:"cpu_pressure_pct,omitempty"`
}

// Percentile returns the q-quantile (0..1) of sorted durations by the
// nearest-rank method, in milliseconds; nil when there are none.
func Percentile(sorted []time.Duration, q float64) *float64 {
	if len(sorted) == 0 {
		return nil
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return Ms(sorted[i])
}

// Ms returns d in milliseconds, rounded to microseconds.
func Ms(d time.Duration) *float64 {
	v := math.Round(float64(d)/1e3) / 1e3
	return &v
}

// Float returns a pointer to v rounded to 4 decimals; nil for NaN or ±Inf.
func Float(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	v = math.Round(v*1e4) / 1e4
	return &v
}

// SetLatencies fills the e2e fields from unsorted latencies. It sorts a
// copy: the caller's slice stays paired with its SentAt (the latency log
// writes both).
func (r *Result) SetLatencies(lat []time.Duration) {
	lat = slices.Sorted(slices.Values(lat))
	r.E2EP50ms = Percentile(lat, 0.50)
	r.E2EP90ms = Percentile(lat, 0.90)
	r.E2EP99ms = Percentile(lat, 0.99)
	r.E2EMaxms = Percentile(lat, 1)
}

// SetAckLatencies fills the ack fields from unsorted latencies, sorting a
// copy.
func (r *Result) SetAckLatencies(lat []time.Duration) {
	lat = slices.Sorted(slices.Values(lat))
	r.AckP50ms = Percentile(lat, 0.50)
	r.AckP99ms = Percentile(lat, 0.99)
}
