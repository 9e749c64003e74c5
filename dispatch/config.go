package dispatch

import (
	"cmp"
	"crypto/x509"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/internal/tracing"
)

// Defaults of the settings an operator can change; cmd/hookrelay uses them
// for its environment variables.
const (
	DefaultLease        = 30 * time.Second
	DefaultConcurrency  = 256
	DefaultBatchSize    = 50
	DefaultIdlePoll     = 200 * time.Millisecond
	DefaultBusyPoll     = 5 * time.Millisecond
	DefaultClaimLoops   = 2
	DefaultAckInterval  = 10 * time.Millisecond
	DefaultAckBatch     = 100
	DefaultAckFlushers  = 4
	DefaultDrainTimeout = 10 * time.Second
	// DefaultLatencyBudget is cmd/hookrelay's HOOKRELAY_LATENCY_BUDGET
	// (Config.LatencyBudget; the zero Config has none).
	DefaultLatencyBudget = 40 * time.Millisecond

	DefaultOpsPoll      = time.Second
	DefaultOpsTimeout   = 10 * time.Second
	DefaultOpsRetryBase = 5 * time.Second
	DefaultOpsRetryMax  = time.Hour
	DefaultOpsAttempts  = 12
	DefaultOpsCoalesce  = time.Minute

	// MaxQuickRetries bounds Config.QuickRetries: quick retries are extra
	// attempts, so their number must stay small.
	MaxQuickRetries = 5
)

// DefaultQuickRetries are the waits after a delivery's first failed
// attempts, before its endpoint's retry_schedule begins (Config.QuickRetries).
var DefaultQuickRetries = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}

// Config configures a Dispatcher. Zero values get the defaults named
// (WithDefaults).
type Config struct {
	// Queues is the number of logical queues (HOOKRELAY_QUEUES). Default
	// hookrelay.DefaultQueues.
	Queues int
	// Lease is how long a claimed delivery or a held logical queue stays with
	// a silent dispatcher (HOOKRELAY_LEASE). Default DefaultLease (30s).
	Lease time.Duration
	// Concurrency bounds deliveries in flight in this process. Default
	// DefaultConcurrency (256).
	Concurrency int
	// BatchSize is the most rows one claim takes. Default DefaultBatchSize (50).
	BatchSize int
	// MaxRate caps the deliveries this process claims per second (first
	// attempts and retries alike); 0, the default, means no cap. At the cap
	// a claim waits for a batch's worth of tokens (BatchSize/MaxRate: 8 ms
	// at 6,000/s, so keep the cap well above BatchSize). See pacer.
	MaxRate float64
	// IdlePoll is the longest pause between claims when nothing is due.
	// Default DefaultIdlePoll (200ms).
	IdlePoll time.Duration
	// BusyPoll is the pause after a claim that found fewer rows than it
	// could take: longer means bigger batches (less CPU per delivery), shorter
	// means lower latency. Default DefaultBusyPoll (5ms).
	BusyPoll time.Duration
	// LatencyBudget is the delay a callback may gain so that statements
	// carry more rows at a moderate rate (HOOKRELAY_LATENCY_BUDGET; 0, the
	// default here, is the lowest latency). The claim loops take half of it
	// (claimPace: after a claim that was not full, the next waits until half
	// a batch was announced or the share has passed; BusyPoll no longer
	// applies), the acknowledgements half (a result waits for its batch up
	// to it or AckInterval, when longer); the group commit takes a quarter
	// (ingest.BatcherConfig.LatencyBudget). At full load claims are full
	// and go at once.
	LatencyBudget time.Duration
	// ClaimLoops is how many claim loops share the held queues (each claims
	// for its part in one statement). Default DefaultClaimLoops (2).
	ClaimLoops int
	// Listen makes the dispatcher LISTEN for the announcements of stored
	// callbacks that APIs in other processes send (db.DueNotify), so an idle
	// dispatcher claims them at once instead of at the end of its pause (up
	// to IdlePoll). It needs a session of its own: leave it off behind
	// pgbouncer in transaction mode. Default false.
	Listen bool
	// SelfToken is the announcement token of the API in this process, if
	// any: its announcements are ignored, because that API wakes this
	// dispatcher directly (Wake).
	SelfToken string
	// ListenRetry is the pause before the LISTEN session is opened again
	// after it was lost. Default 1s.
	ListenRetry time.Duration
	// AllowPrivateTargets lets endpoints on loopback/private/link-local
	// addresses be reached. Default false.
	AllowPrivateTargets bool
	// EgressProxy, when set, carries every delivery (and operational
	// webhook) through an HTTP proxy's CONNECT tunnels; the SSRF policy
	// still judges the endpoint's addresses. Default nil: direct.
	EgressProxy *EgressProxy
	// RootCAs verifies the endpoints' TLS certificates. Default nil: the
	// system's roots.
	RootCAs *x509.CertPool
	// UserAgent is sent with every delivery. Default "hookrelay/dev".
	UserAgent string
	// Tracer traces dispatch (HOOKRELAY_TRACING; see claim and attempt): a
	// span per claim and per delivery attempt, the attempt's a child of the
	// span of the request that stored its callback
	// (db.ClaimedDelivery.Traceparent) and linked to its claim's, and a
	// traceparent header naming the attempt's span on each request unless
	// the endpoint opts out (send_traceparent false). Default the no-op
	// tracer (tracing.OrNoop): no span, no header, no cost.
	Tracer trace.Tracer
	// AckInterval and AckBatch bound how long a result waits to be
	// acknowledged and how many go in one transaction. Default
	// DefaultAckInterval (10ms) and DefaultAckBatch (100).
	AckInterval time.Duration
	AckBatch    int
	// AckFlushers is how many ack transactions may run at once. Default
	// DefaultAckFlushers (4).
	AckFlushers int
	// EndpointCacheTTL is how long endpoint settings and secrets are cached.
	// Default 2s.
	EndpointCacheTTL time.Duration
	// QuickRetries are the waits after a delivery's first failed attempts
	// (HOOKRELAY_DISPATCH_QUICK_RETRIES): failed attempt k <= len waits
	// QuickRetries[k-1], and only then does the endpoint's retry_schedule
	// begin, from its first delay. They are extra attempts: a schedule of n
	// delays allows 1 + len(QuickRetries) + n attempts in all. A transient
	// failure (a deploy, a dropped connection) is usually over within
	// seconds, and while a delivery waits the later callbacks of its
	// ordering key wait behind it; a failing endpoint's circuit
	// (CircuitThreshold) bounds what they cost it. Nil: DefaultQuickRetries
	// (0.5s, 1s, 2s); empty and not nil: none (1 + n attempts). At most
	// MaxQuickRetries.
	QuickRetries []time.Duration
	// RetryJitter is the ± fraction applied to retry delays. Default 0.2;
	// negative disables jitter.
	RetryJitter float64
	// CircuitThreshold consecutive failures open an endpoint's circuit for
	// CircuitBase, doubling up to CircuitMax while probes fail. Defaults 10,
	// 30s, 10m.
	CircuitThreshold int
	CircuitBase      time.Duration
	CircuitMax       time.Duration
	// DisableAfter disables an endpoint failing for that long. Default 120h.
	DisableAfter time.Duration
	// HoldDelay is how long a held delivery (disabled endpoint, 410) waits
	// before it is looked at again. Default 1m.
	HoldDelay time.Duration
	// StoreRetryDelay is the wait after the payload store could not serve an
	// offloaded payload (no attempt is spent). Default 5s.
	StoreRetryDelay time.Duration
	// EndpointWait is how long a claimed delivery may wait for its
	// endpoint's max_in_flight slot or rate limit before it steps aside
	// (released, visible again after SaturatedDelay or when the rate limiter
	// has a token). Default 50ms.
	EndpointWait time.Duration
	// SaturatedDelay is the shortest time a delivery steps aside from a
	// saturated endpoint; it grows with how long none of the endpoint's
	// slots has come free (up to 10s), so deliveries to a hanging endpoint
	// do not churn. Default 200ms.
	SaturatedDelay time.Duration
	// DrainTimeout bounds how long shutdown waits for deliveries in flight
	// before it releases them. Default DefaultDrainTimeout (10s).
	DrainTimeout time.Duration
	// PresignTTL is the validity of reference-mode payload URLs. Default 24h.
	PresignTTL time.Duration
	// OpsPoll is the pause between rounds of operational webhooks. Default
	// DefaultOpsPoll (1s).
	OpsPoll time.Duration
	// OpsTimeout bounds one attempt to an ops endpoint. Default
	// DefaultOpsTimeout (10s).
	OpsTimeout time.Duration
	// OpsRetryBase is the wait after an ops message's first failed attempt,
	// doubling up to OpsRetryMax; after OpsAttempts attempts it is dropped.
	// Defaults 5s, 1h and 12 (about 7 hours in all).
	OpsRetryBase time.Duration
	OpsRetryMax  time.Duration
	OpsAttempts  int
	// OpsCoalesce is the window in which an endpoint's dead letters make one
	// delivery.dead_lettered event, from its first. Default
	// DefaultOpsCoalesce (1m).
	OpsCoalesce time.Duration
	// Hostname and PID identify the process in the dispatchers table.
	// Default os.Hostname() and os.Getpid().
	Hostname string
	PID      int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Rand returns a float in [0,1) for jitter. Default math/rand/v2.
	Rand func() float64
	// Resolve, when set, resolves endpoint host names (tests use it to change
	// DNS answers). Default: the system resolver.
	Resolve Resolver
}

// WithDefaults returns c with every zero field set to its default. New
// applies it.
func (c Config) WithDefaults() Config {
	c.Queues = cmp.Or(c.Queues, hookrelay.DefaultQueues)
	c.Tracer = tracing.OrNoop(c.Tracer)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.IdlePoll = cmp.Or(c.IdlePoll, DefaultIdlePoll)
	c.BusyPoll = cmp.Or(c.BusyPoll, DefaultBusyPoll)
	c.ClaimLoops = cmp.Or(c.ClaimLoops, DefaultClaimLoops)
	c.ListenRetry = cmp.Or(c.ListenRetry, time.Second)
	c.UserAgent = cmp.Or(c.UserAgent, "hookrelay/dev")
	c.AckInterval = cmp.Or(c.AckInterval, DefaultAckInterval)
	c.AckBatch = cmp.Or(c.AckBatch, DefaultAckBatch)
	c.AckFlushers = cmp.Or(c.AckFlushers, DefaultAckFlushers)
	c.EndpointCacheTTL = cmp.Or(c.EndpointCacheTTL, 2*time.Second)
	if c.QuickRetries == nil {
		c.QuickRetries = DefaultQuickRetries
	}
	c.RetryJitter = cmp.Or(c.RetryJitter, 0.2)
	c.RetryJitter = max(c.RetryJitter, 0)
	c.CircuitThreshold = cmp.Or(c.CircuitThreshold, 10)
	c.CircuitBase = cmp.Or(c.CircuitBase, 30*time.Second)
	c.CircuitMax = cmp.Or(c.CircuitMax, 10*time.Minute)
	c.DisableAfter = cmp.Or(c.DisableAfter, 120*time.Hour)
	c.HoldDelay = cmp.Or(c.HoldDelay, time.Minute)
	c.StoreRetryDelay = cmp.Or(c.StoreRetryDelay, 5*time.Second)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DefaultDrainTimeout)
	c.EndpointWait = cmp.Or(c.EndpointWait, 50*time.Millisecond)
	c.SaturatedDelay = cmp.Or(c.SaturatedDelay, 200*time.Millisecond)
	c.PresignTTL = cmp.Or(c.PresignTTL, 24*time.Hour)
	c.OpsPoll = cmp.Or(c.OpsPoll, DefaultOpsPoll)
	c.OpsTimeout = cmp.Or(c.OpsTimeout, DefaultOpsTimeout)
	c.OpsRetryBase = cmp.Or(c.OpsRetryBase, DefaultOpsRetryBase)
	c.OpsRetryMax = cmp.Or(c.OpsRetryMax, DefaultOpsRetryMax)
	c.OpsAttempts = cmp.Or(c.OpsAttempts, DefaultOpsAttempts)
	c.OpsCoalesce = cmp.Or(c.OpsCoalesce, DefaultOpsCoalesce)
	if c.Hostname == "" {
		c.Hostname, _ = os.Hostname()
	}
	c.PID = cmp.Or(c.PID, os.Getpid())
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = defaultRand
	}
	return c
}
