package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/eventtype"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/internal/tracing"
	"github.com/hookrelay/hookrelay/openapi"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/storage"
	"github.com/hookrelay/hookrelay/throttle"
)

// Defaults of the settings an operator can change; cmd/hookrelay uses them
// for its environment variables (those of the intake pipeline are package
// ingest's).
const (
	DefaultMaxBodyBytes = 10 << 20
	DefaultOffloadBytes = 8192
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
	// ingest.DefaultMemoryBytes (256 MiB).
	MemoryBytes int
	// OffloadBytes: payloads larger than this go to the S3 store, the row
	// keeps the key. Default DefaultOffloadBytes (8192).
	OffloadBytes int
	// CacheTTL is how often the routing snapshot (ingest.Routes) reloads.
	// Default ingest.DefaultCacheTTL (1s).
	CacheTTL time.Duration
	// AdminTokenTTL is how long the admin token hash is cached. Default 5s.
	AdminTokenTTL time.Duration
	// Batcher configures group commit.
	Batcher ingest.BatcherConfig
	// Announce has the API tell dispatchers in other processes that it
	// stored callbacks (PostgreSQL NOTIFY; dispatch.Config.Listen), with
	// pauses of at least AnnounceInterval (see ingest.Announcer), carrying
	// AnnounceToken, which names this process (its own dispatcher, woken
	// through Batcher.OnStored, ignores it). Default false, and
	// ingest.DefaultAnnounceInterval (10ms).
	Announce         bool
	AnnounceInterval time.Duration
	AnnounceToken    string
	// Tracer traces the callbacks (HOOKRELAY_TRACING; see Server.callback
	// and ingest.BatcherConfig.Tracer): a span per callback request,
	// continuing the trace of a traceparent the carrier sent, whose context
	// is stored with the message (NewMessage.Traceparent) for its
	// deliveries' spans, and a span per group commit linked to the requests
	// it commits. Default the no-op tracer (tracing.OrNoop): no span,
	// nothing stored, no cost.
	Tracer trace.Tracer
	// Watch configures the carriers' watch: the refusal log's caps and
	// writes, the carrier statistics and metrics (ingest.WatchConfig).
	Watch ingest.WatchConfig
	// Throttle delays bearer authentications from client addresses whose
	// tokens failed too often. Default a Throttle of this server's own, with
	// unregistered metrics; a process shares one with its dashboard.
	Throttle *throttle.Throttle
	// TrustedProxies are the proxies whose X-Forwarded-For names a
	// callback's client address (HOOKRELAY_TRUSTED_PROXIES), for the
	// carriers' allowed source addresses. Default none: the TCP peer is
	// the client.
	TrustedProxies []netip.Prefix
	// EventTypes is the event type catalog: the API's event type routes
	// serve it, and the canonical events of the carriers' adapters are
	// checked against its schemas at ingest (an event of a type not in it
	// is refused). The server runs it (and, with Announce, its LISTEN
	// watch), so a process may share it with its operations
	// (ops.Config.EventValidator). Default a catalog of the server's own.
	EventTypes *eventtype.Catalog
}

// WithDefaults returns c with every zero field set to its default. New
// applies it.
func (c Config) WithDefaults() Config {
	c.Queues = cmp.Or(c.Queues, hookrelay.DefaultQueues)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.OffloadBytes = cmp.Or(c.OffloadBytes, DefaultOffloadBytes)
	c.MemoryBytes = cmp.Or(c.MemoryBytes, ingest.DefaultMemoryBytes)
	c.CacheTTL = cmp.Or(c.CacheTTL, ingest.DefaultCacheTTL)
	c.AdminTokenTTL = cmp.Or(c.AdminTokenTTL, 5*time.Second)
	c.Tracer = tracing.OrNoop(c.Tracer)
	c.Batcher = c.Batcher.WithDefaults()
	c.AnnounceInterval = cmp.Or(c.AnnounceInterval, ingest.DefaultAnnounceInterval)
	if c.Throttle == nil {
		c.Throttle = throttle.New(throttle.Config{})
	}
	return c
}

// Server is the API: its handlers, and the parts of the callback intake
// pipeline (package ingest) its callback handler composes.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	db       *db.DB
	payloads *storage.Store
	ops      *ops.Service
	routes   *ingest.Routes
	batcher  *ingest.Batcher
	announce *ingest.Announcer // nil unless cfg.Announce
	metrics  *metrics
	limits   *ingest.RateLimits
	bodies   *ingest.BodyMemory
	watch    *ingest.Watch
	pull     *pullSignal // wakes the pulls waiting for events
	// eventTypes validates events against the catalog's schemas; the
	// API's own changes of the catalog refresh it at once.
	eventTypes *eventtype.Catalog
	// tracing is whether cfg.Tracer records spans (tracing.Records): the
	// callbacks skip everything about spans without it.
	tracing bool

	// needs is what each route needs of its caller, by routeKey (Register
	// fills it; the route walks of the tests read it).
	needs map[string]need

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
		routes: ingest.NewRoutes(store, cfg.CacheTTL), metrics: m, limits: ingest.NewRateLimits(),
		bodies:     ingest.NewBodyMemory(int64(cfg.MemoryBytes), reg),
		tracing:    tracing.Records(cfg.Tracer),
		watch:      ingest.NewWatch(cfg.Watch, store, logger, reg),
		eventTypes: cfg.EventTypes,
		needs:      map[string]need{},
	}
	if s.eventTypes == nil {
		s.eventTypes = eventtype.NewCatalog(store, eventtype.Config{TTL: cfg.CacheTTL, Logger: logger})
	}
	s.routes.SetValidator(s.eventTypes)
	s.pull = &pullSignal{db: store, logger: logger}
	stored := cfg.Batcher.OnStored
	cfg.Batcher.OnStored = func(n int, queues []int) {
		if stored != nil {
			stored(n, queues)
		}
		s.pull.wake()
	}
	if cfg.Announce {
		s.announce = ingest.NewAnnouncer(store.DueNotify, cfg.AnnounceToken, cfg.AnnounceInterval, logger, m.announcements)
		local := cfg.Batcher.OnStored
		cfg.Batcher.OnStored = func(n int, queues []int) {
			if local != nil {
				local(n, queues)
			}
			s.announce.Stored(n, queues)
		}
	}
	cfg.Batcher.Tracer = cfg.Tracer
	s.batcher = ingest.NewBatcher(cfg.Batcher, store.MessageInsertMany, reg)
	return s
}

// Run runs the batcher, the routing snapshot's refresher and its
// configuration watch, and the announcer, until ctx ends; it returns after
// every accepted callback has been answered.
func (s *Server) Run(ctx context.Context) error {
	s.pull.setRun(ctx)
	defer s.pull.wg.Wait()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		s.routes.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		s.eventTypes.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		s.watch.Run(ctx)
	}()
	if s.announce != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.announce.Run(ctx)
		}()
	}
	if s.announce != nil {
		// The same switch as announcements: both need LISTEN/NOTIFY, which
		// a pooler in transaction mode does not carry.
		// One LISTEN session follows the changes for the routing
		// snapshot and the event type catalog alike.
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.db.FollowConfig(ctx, "hookrelay-api-config", "the routing cache and the event type catalog", s.logger,
				func(ctx context.Context) {
					_, _ = s.routes.Refresh(ctx)
					_ = s.eventTypes.Refresh(ctx)
				},
				func(on bool) {
					s.routes.SetListening(on)
					s.eventTypes.SetListening(on)
				})
		}()
	}
	s.batcher.Run(ctx)
	wg.Wait()
	return nil
}

// EventTypes returns the catalog that validates events against their types'
// schemas; Run keeps it current.
func (s *Server) EventTypes() *eventtype.Catalog { return s.eventTypes }

// Register adds the API routes to e. Their errors are answered by the
// router's error handler (package httperr).
func (s *Server) Register(e *echo.Echo) {
	// Middleware per route rather than per group: echo gives a group with
	// middleware a catch-all route, which would answer unknown paths with
	// 401/403 instead of 404.
	// A panic in a handler becomes a 500 with the generic message (the
	// stack goes to the log through the error handler).
	rec := middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true})
	// Every route declares what it needs (need): the least operator role,
	// and whether merchants' or carriers' keys may call it. admin and
	// merchant are the names of the common two: the admin role, and the
	// admin role or the merchant's own key.
	route := func(method, path string, h echo.HandlerFunc, n need, mw ...echo.MiddlewareFunc) {
		s.needs[routeKey(method, path)] = n
		e.Add(method, path, h, append(append([]echo.MiddlewareFunc{rec}, mw...), s.auth(n))...)
	}
	viewer, support, operator := need{role: access.Viewer}, need{role: access.Support}, need{role: access.Operator}
	admin, owner := need{role: access.Admin}, need{role: access.Owner}
	merchant, carrier := admin.orMerchant(), need{carrier: true}

	route(http.MethodPost, "/v1/carriers", s.createCarrier, admin)
	route(http.MethodGet, "/v1/carriers", s.listCarriers, viewer)
	route(http.MethodGet, "/v1/carriers/:id", s.getCarrier, viewer)
	route(http.MethodPatch, "/v1/carriers/:id", s.patchCarrier, admin)
	route(http.MethodDelete, "/v1/carriers/:id", s.deleteCarrier, admin)
	route(http.MethodPost, "/v1/carriers/:id/enable", s.setCarrierEnabled(true), operator)
	route(http.MethodPost, "/v1/carriers/:id/disable", s.setCarrierEnabled(false), operator)
	route(http.MethodPost, "/v1/carriers/:id/rotate-key", s.rotateCarrierKey, admin)
	route(http.MethodPost, "/v1/merchants", s.createMerchant, admin)
	route(http.MethodGet, "/v1/merchants", s.listMerchants, viewer)
	route(http.MethodPost, "/v1/merchants/:id/rotate-key", s.rotateMerchantKey, admin)
	route(http.MethodPost, "/v1/merchants/:id/portal-links", s.createPortalLink, admin)
	route(http.MethodGet, "/v1/sessions", s.listSessions, admin)
	route(http.MethodDelete, "/v1/sessions/:id", s.revokeSession, admin)
	route(http.MethodGet, "/v1/stats", s.stats, viewer)
	route(http.MethodGet, "/v1/dead-letters", s.listDeadLetters, support)
	route(http.MethodPost, "/v1/dead-letters/retry", s.retryDeadLetters, operator)
	route(http.MethodPost, "/v1/dead-letters/discard", s.discardDeadLetters, operator)
	route(http.MethodPost, "/v1/ops-endpoints", s.createOpsEndpoint, admin)
	route(http.MethodGet, "/v1/ops-endpoints", s.listOpsEndpoints, viewer)
	route(http.MethodDelete, "/v1/ops-endpoints/:id", s.deleteOpsEndpoint, admin)
	route(http.MethodGet, "/v1/audit-log", s.exportAuditLog, admin)

	route(http.MethodPost, "/v1/endpoints", s.createEndpoint, merchant)
	route(http.MethodGet, "/v1/endpoints", s.listEndpoints, viewer.orMerchant())
	route(http.MethodGet, "/v1/endpoints/:id", s.getEndpoint, viewer.orMerchant())
	route(http.MethodPatch, "/v1/endpoints/:id", s.patchEndpoint, merchant)
	route(http.MethodDelete, "/v1/endpoints/:id", s.deleteEndpoint, merchant)
	route(http.MethodPost, "/v1/endpoints/:id/enable", s.enableEndpoint, operator.orMerchant())
	route(http.MethodPost, "/v1/endpoints/:id/disable", s.disableEndpoint, operator.orMerchant())
	route(http.MethodPost, "/v1/endpoints/:id/rotate-secret", s.rotateSecret, merchant)
	route(http.MethodPost, "/v1/endpoints/:id/test", s.pingEndpoint, operator.orMerchant())
	route(http.MethodGet, "/v1/endpoints/:id/deliveries", s.listDeliveries, support.orMerchant())
	route(http.MethodGet, "/v1/endpoints/:id/events", s.pullEvents, support.orMerchant())
	route(http.MethodPost, "/v1/endpoints/:id/events/ack", s.ackEvents, operator.orMerchant())
	route(http.MethodPost, "/v1/endpoints/:id/replay", s.startReplay, operator.orMerchant())
	route(http.MethodGet, "/v1/replays/:id", s.getReplay, viewer.orMerchant())
	route(http.MethodPost, "/v1/replays/:id/cancel", s.cancelReplay, operator.orMerchant())
	route(http.MethodGet, "/v1/deliveries/:id", s.getDelivery, support.orMerchant())
	route(http.MethodPost, "/v1/deliveries/:id/retry", s.retryDelivery, operator.orMerchant())
	route(http.MethodGet, "/v1/messages", s.listMessages, support.orMerchant())
	route(http.MethodGet, "/v1/messages/:id", s.getMessage, support.orMerchant())

	// The event type catalog: merchants read it, the operator writes it.
	route(http.MethodPost, "/v1/event-types", s.createEventType, admin)
	route(http.MethodGet, "/v1/event-types", s.listEventTypes, viewer.orMerchant())
	route(http.MethodGet, "/v1/event-types/:name", s.getEventType, viewer.orMerchant())
	route(http.MethodPatch, "/v1/event-types/:name", s.patchEventType, admin)

	route(http.MethodGet, "/v1/carriers/:id/refusals", s.listCarrierRefusals, support)
	route(http.MethodGet, "/v1/carriers/:id/health", s.carrierHealth, viewer)
	route(http.MethodPost, "/v1/carriers/:id/try", s.tryCarrierCallback, operator)

	// Team access: users are the owners' to manage; tokens anyone's, each
	// within their own power (ops.CreateToken).
	route(http.MethodGet, "/v1/users", s.listUsers, owner)
	route(http.MethodPost, "/v1/users/invites", s.inviteUser, owner)
	route(http.MethodPatch, "/v1/users/:id", s.patchUser, owner)
	route(http.MethodPost, "/v1/users/:id/deactivate", s.deactivateUser, owner)
	route(http.MethodPost, "/v1/users/:id/reactivate", s.reactivateUser, owner)
	route(http.MethodPost, "/v1/users/:id/reset", s.resetUser, owner)
	route(http.MethodGet, "/v1/tokens", s.listTokens, viewer)
	route(http.MethodPost, "/v1/tokens", s.createToken, viewer)
	route(http.MethodDelete, "/v1/tokens/:id", s.revokeToken, viewer)

	// Adapters: the operator writes and activates them; a dry run reads
	// stored callbacks; parked callbacks carry bodies.
	route(http.MethodPost, "/v1/carriers/:id/adapters", s.createAdapter, admin)
	route(http.MethodGet, "/v1/carriers/:id/adapters", s.listAdapters, viewer)
	route(http.MethodPost, "/v1/carriers/:id/adapters/deactivate", s.deactivateAdapter, admin)
	route(http.MethodGet, "/v1/carriers/:id/adapters/:version", s.getAdapter, viewer)
	route(http.MethodPost, "/v1/carriers/:id/adapters/:version/dry-run", s.dryRunAdapter, admin)
	route(http.MethodPost, "/v1/carriers/:id/adapters/:version/activate", s.activateAdapter, admin)
	route(http.MethodGet, "/v1/carriers/:id/parked", s.listParked, support)
	route(http.MethodPost, "/v1/carriers/:id/parked/unpark", s.unparkCallbacks, operator)

	// The carriers' watch (watchCallbacks) sees every answer, the
	// authentication's refusals included.
	route(http.MethodPost, "/v1/callbacks", s.callback, carrier, s.watchCallbacks)

	e.GET("/openapi.json", echo.WrapHandler(openapi.Handler()), rec)
}
