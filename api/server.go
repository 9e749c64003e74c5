package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/openapi"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/storage"
	"github.com/hookrelay/hookrelay/throttle"
)

// Defaults of the settings an operator can change; cmd/hookrelay uses them
// for its environment variables.
const (
	DefaultMaxBodyBytes     = 10 << 20
	DefaultOffloadBytes     = 8192
	DefaultCacheTTL         = time.Second
	DefaultAnnounceInterval = 10 * time.Millisecond
	DefaultMemoryBytes      = 256 << 20
)

// Config configures the API. Zero fields get the defaults named
// (WithDefaults).
type Config struct {
	// Queues is the number of logical queues (HOOKRELAY_QUEUES). Default
	// hookrelay.DefaultQueues.
	Queues int
	// MaxBodyBytes is the largest callback body taken; larger gets 413.
	// Default DefaultMaxBodyBytes (10 MiB).
	MaxBodyBytes int
	// MemoryBytes bounds the memory that the bodies of the callbacks in
	// flight hold together (their buffers grow with what arrives; while one
	// grows, its old and new buffers both count). A callback whose body
	// would take more gets 503 with Retry-After. Default
	// DefaultMemoryBytes (256 MiB).
	MemoryBytes int
	// OffloadBytes: payloads larger than this go to the S3 store, the row
	// keeps the key. Default DefaultOffloadBytes (8192).
	OffloadBytes int
	// CacheTTL is how often the configuration cache reloads. Default
	// DefaultCacheTTL (1s).
	CacheTTL time.Duration
	// AdminTokenTTL is how long the admin token hash is cached. Default 5s.
	AdminTokenTTL time.Duration
	// Batcher configures group commit.
	Batcher BatcherConfig
	// Announce has the API tell dispatchers in other processes that it
	// stored callbacks (PostgreSQL NOTIFY; dispatch.Config.Listen), with
	// pauses of at least AnnounceInterval (see announcer), carrying
	// AnnounceToken, which names this process (its own dispatcher, woken
	// through Batcher.OnStored, ignores it). Default false, and
	// DefaultAnnounceInterval (10ms).
	Announce         bool
	AnnounceInterval time.Duration
	AnnounceToken    string
	// Tracer, when set, traces ingest (HOOKRELAY_TRACING; see
	// tracedCallback and batcher.commit): a span per callback request,
	// continuing the trace of a traceparent the carrier sent, whose context
	// is stored with the message (NewMessage.Traceparent) for its
	// deliveries' spans, and a span per group commit linked to the requests
	// it commits. Default nil: no span, nothing stored, no cost.
	Tracer trace.Tracer
	// Throttle delays bearer authentications from client addresses whose
	// tokens failed too often. Default a Throttle of this server's own, with
	// unregistered metrics; a process shares one with its dashboard.
	Throttle *throttle.Throttle
}

// WithDefaults returns c with every zero field set to its default. New
// applies it.
func (c Config) WithDefaults() Config {
	c.Queues = cmp.Or(c.Queues, hookrelay.DefaultQueues)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.OffloadBytes = cmp.Or(c.OffloadBytes, DefaultOffloadBytes)
	c.MemoryBytes = cmp.Or(c.MemoryBytes, DefaultMemoryBytes)
	c.CacheTTL = cmp.Or(c.CacheTTL, DefaultCacheTTL)
	c.AdminTokenTTL = cmp.Or(c.AdminTokenTTL, 5*time.Second)
	c.Batcher = c.Batcher.WithDefaults()
	c.AnnounceInterval = cmp.Or(c.AnnounceInterval, DefaultAnnounceInterval)
	if c.Throttle == nil {
		c.Throttle = throttle.New(throttle.Config{})
	}
	return c
}

// Server is the API: handlers, caches, the rate limiters and the batcher.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	db       *db.DB
	payloads *storage.Store
	ops      *ops.Service
	cache    *cache
	batcher  *batcher
	announce *announcer // nil unless cfg.Announce
	metrics  *metrics
	limits   *limiters
	bodies   *bodyMemory

	adminMu     sync.Mutex // guards adminHash and adminLoaded
	adminHash   []byte
	adminLoaded time.Time
}

// New returns the API server; its operator and merchant actions go through
// operations (the dashboard's go through the same ones). reg receives its
// metrics (may be nil).
func New(logger *slog.Logger, cfg Config, store *db.DB, payloads *storage.Store, reg prometheus.Registerer, operations *ops.Service) *Server {
	cfg = cfg.WithDefaults()
	m := newMetrics(reg)
	s := &Server{
		cfg: cfg, logger: logger, db: store, payloads: payloads, ops: operations,
		cache: newCache(store, cfg.CacheTTL), metrics: m, limits: newLimiters(),
		bodies: newBodyMemory(int64(cfg.MemoryBytes), reg),
	}
	if cfg.Announce {
		s.announce = newAnnouncer(store.DueNotify, cfg.AnnounceToken, cfg.AnnounceInterval, logger, m.announcements)
		local := cfg.Batcher.OnStored
		cfg.Batcher.OnStored = func(n int, queues []int) {
			if local != nil {
				local(n, queues)
			}
			s.announce.stored(n, queues)
		}
	}
	s.batcher = newBatcher(cfg.Batcher, store.MessageInsertMany, m)
	s.batcher.tracer = cfg.Tracer
	if reg != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hookrelay_ingest_callbacks_waiting",
			Help: "Callbacks waiting for the group commit or being committed (saturated from HOOKRELAY_INGEST_SATURATION).",
		}, func() float64 { return float64(s.batcher.quota.waiting()) }))
	}
	return s
}

// Run runs the batcher, the cache refresher and its configuration watch
// until ctx ends; it returns after every accepted callback has been answered.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.cache.run(ctx)
	}()
	if s.announce != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.announce.run(ctx)
		}()
	}
	if s.announce != nil {
		// The same switch as announcements: both need LISTEN/NOTIFY, which
		// a pooler in transaction mode does not carry.
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.watchConfig(ctx)
		}()
	}
	s.batcher.run(ctx)
	wg.Wait()
	return nil
}

// Register adds the API routes to e. Their errors are answered by the
// router's error handler (package httperr).
func (s *Server) Register(e *echo.Echo) {
	// Middleware per route rather than per group: echo gives a group with
	// middleware a catch-all route, which would answer unknown paths with
	// 401/403 instead of 404.
	// A panic in a handler becomes a 500 with the generic message (the
	// stack goes to the log through the error handler).
	rec := middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true})
	route := func(method, path string, h echo.HandlerFunc, kinds keyKind) {
		e.Add(method, path, h, rec, s.auth(kinds))
	}
	const admin, merchant, carrier = kindAdmin, kindMerchant | kindAdmin, kindCarrier
	route(http.MethodPost, "/v1/carriers", s.createCarrier, admin)
	route(http.MethodGet, "/v1/carriers", s.listCarriers, admin)
	route(http.MethodPost, "/v1/merchants", s.createMerchant, admin)
	route(http.MethodGet, "/v1/merchants", s.listMerchants, admin)
	route(http.MethodPost, "/v1/merchants/:id/rotate-key", s.rotateMerchantKey, admin)
	route(http.MethodPost, "/v1/merchants/:id/portal-links", s.createPortalLink, admin)
	route(http.MethodGet, "/v1/sessions", s.listSessions, admin)
	route(http.MethodDelete, "/v1/sessions/:id", s.revokeSession, admin)
	route(http.MethodGet, "/v1/stats", s.stats, admin)
	route(http.MethodGet, "/v1/dead-letters", s.listDeadLetters, admin)
	route(http.MethodPost, "/v1/dead-letters/retry", s.retryDeadLetters, admin)
	route(http.MethodPost, "/v1/dead-letters/discard", s.discardDeadLetters, admin)
	route(http.MethodPost, "/v1/ops-endpoints", s.createOpsEndpoint, admin)
	route(http.MethodGet, "/v1/ops-endpoints", s.listOpsEndpoints, admin)
	route(http.MethodDelete, "/v1/ops-endpoints/:id", s.deleteOpsEndpoint, admin)

	route(http.MethodPost, "/v1/endpoints", s.createEndpoint, merchant)
	route(http.MethodGet, "/v1/endpoints", s.listEndpoints, merchant)
	route(http.MethodGet, "/v1/endpoints/:id", s.getEndpoint, merchant)
	route(http.MethodPatch, "/v1/endpoints/:id", s.patchEndpoint, merchant)
	route(http.MethodDelete, "/v1/endpoints/:id", s.deleteEndpoint, merchant)
	route(http.MethodPost, "/v1/endpoints/:id/enable", s.enableEndpoint, merchant)
	route(http.MethodPost, "/v1/endpoints/:id/disable", s.disableEndpoint, merchant)
	route(http.MethodPost, "/v1/endpoints/:id/rotate-secret", s.rotateSecret, merchant)
	route(http.MethodPost, "/v1/endpoints/:id/test", s.testEndpoint, merchant)
	route(http.MethodGet, "/v1/endpoints/:id/deliveries", s.listDeliveries, merchant)
	route(http.MethodPost, "/v1/endpoints/:id/replay", s.startReplay, merchant)
	route(http.MethodGet, "/v1/replays/:id", s.getReplay, merchant)
	route(http.MethodPost, "/v1/replays/:id/cancel", s.cancelReplay, merchant)
	route(http.MethodGet, "/v1/deliveries/:id", s.getDelivery, merchant)
	route(http.MethodPost, "/v1/deliveries/:id/retry", s.retryDelivery, merchant)
	route(http.MethodGet, "/v1/messages", s.listMessages, merchant)
	route(http.MethodGet, "/v1/messages/:id", s.getMessage, merchant)

	route(http.MethodPost, "/v1/callbacks", s.callback, carrier)

	e.GET("/openapi.json", echo.WrapHandler(openapi.Handler()), rec)
}
