package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"github.com/hookrelay/hookrelay/eventtype"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/storage"
	"github.com/hookrelay/hookrelay/throttle"
)

// allRoles lists the roles a process can run, in start order.
var allRoles = []string{"api", "dispatch", "web", "maintenance"}

// service is what every role gets: configuration, logger, database, payload
// store, the shared HTTP router and the metrics registry.
type service struct {
	cfg      config
	logger   *slog.Logger
	db       *db.DB
	store    *storage.Store
	echo     *echo.Echo
	registry *prometheus.Registry
	stdout   io.Writer
	// listenAddr is the address the HTTP server actually listens on (useful
	// when cfg.Addr has port 0).
	listenAddr string

	dispatchOnce sync.Once
	dispatch     *dispatch.Dispatcher // see service.dispatcher
	opsOnce      sync.Once
	ops          *ops.Service // see service.operations
	auditOnce    sync.Once
	audit        *audit.Log // see service.auditLog
	// eventTypeCatalog: see service.eventTypes.
	eventTypesOnce   sync.Once
	eventTypeCatalog *eventtype.Catalog
	// throttle delays authentication from client addresses that failed too
	// often; the API and the dashboard share it.
	throttle *throttle.Throttle
	// errs answers every failed request of echo; roles register renderers.
	errs *httperr.Handler
	// roles are the roles this process runs.
	roles []string
	// tracer makes the spans of the api and dispatch roles; the no-op
	// tracer when tracing is off (HOOKRELAY_TRACING).
	tracer trace.Tracer
	// announceToken names this process in its API's announcements of stored
	// callbacks (HOOKRELAY_NOTIFY), so its own dispatcher, which the API
	// wakes directly, ignores them.
	announceToken string
}

// newAnnounceToken returns a token unique to this process run.
func newAnnounceToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// roleFunc starts a role: it registers routes or prepares workers and returns
// the function that runs until ctx ends (nil when the role needs no loop).
type roleFunc func(ctx context.Context, s *service) (func(ctx context.Context) error, error)

var roleStarters = map[string]roleFunc{
	"api":         startAPI,
	"dispatch":    startDispatch,
	"web":         startWeb,
	"maintenance": startMaintenance,
}

func parseRoles(raw string) ([]string, error) {
	if strings.TrimSpace(raw) == "" || raw == "all" {
		return allRoles, nil
	}
	var roles []string
	for _, r := range strings.Split(raw, ",") {
		r = strings.TrimSpace(r)
		if !slices.Contains(allRoles, r) {
			return nil, fmt.Errorf("%w: unknown role %q (want some of %s)", errUsage, r, strings.Join(allRoles, ","))
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	return roles, nil
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ []string) error {
	cmd, _ := findCommand("serve")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	rolesFlag := fs.String("roles", "", "comma-separated roles: api,dispatch,web,maintenance (default: HOOKRELAY_ROLES, else all)")
	if err := parseFlags(cmd, fs, args, stdout, stderr); err != nil {
		return err
	}
	var roles []string
	if *rolesFlag != "" {
		var err error
		if roles, err = parseRoles(*rolesFlag); err != nil {
			return err
		}
	}
	cfg, logger, err := commandConfig(getenv, environ, stderr)
	if err != nil {
		return err
	}
	if roles == nil {
		roles = cfg.Roles
	}
	stopPprof, err := startPprof(cfg.PprofAddr, logger)
	if err != nil {
		return err
	}
	defer stopPprof()
	s, cleanup, err := newService(ctx, cfg, logger, stdout)
	if err != nil {
		return err
	}
	defer cleanup()
	s.roles = roles

	defer func() {
		if s.dispatch != nil {
			s.dispatch.Close()
		}
	}()

	runs := map[string]func(context.Context) error{}
	for _, name := range roles {
		fn, err := roleStarters[name](ctx, s)
		if err != nil {
			return fmt.Errorf("start role %s: %w", name, err)
		}
		if fn != nil {
			runs[name] = fn
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	s.listenAddr = ln.Addr().String()
	srv := newHTTPServer(cfg, s.echo, logger)
	logger.Info("hookrelay serving", "addr", s.listenAddr, "roles", strings.Join(roles, ","),
		"dashboard", "http://"+s.listenAddr+"/ui/", "version", version)

	g, gctx := errgroup.WithContext(ctx)
	for name, fn := range runs {
		g.Go(func() error {
			if err := fn(gctx); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("role %s: %w", name, err)
			}
			return nil
		})
	}
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		logger.Info("shutting down")
		shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		return srv.Shutdown(shCtx)
	})
	err = g.Wait()
	logger.Info("stopped", "error", err)
	return err
}

// newHTTPServer returns the server of the API and the dashboard: every
// phase of a request and of an idle connection has a deadline, so a client
// that stops sending or reading cannot hold a connection forever.
func newHTTPServer(cfg config, h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      writeTimeout(cfg),
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// minWriteTimeout is the shortest time a request gets from the end of its
// headers to the last byte of its answer. The slowest calls that are not
// bounded by a statement: an endpoint test (API and dashboard) waits up to
// the longest endpoint timeout, 120 s; a callback up to 60 s for its body
// (ReadTimeout), 15 s for the payload store and 30 s for its batch.
const minWriteTimeout = 3 * time.Minute

// writeTimeout is the server's WriteTimeout: a client that does not read
// its answer holds a connection and its goroutine this long at most, and no
// request that could still succeed is cut, operator calls and dashboard
// pages whose statements may run up to HOOKRELAY_STATEMENT_TIMEOUT included.
func writeTimeout(cfg config) time.Duration {
	return max(minWriteTimeout, cfg.DB.StatementTimeout+time.Minute)
}

// newService connects to the database (creating and migrating it), starts the
// embedded S3 store when no external one is configured, and builds the router
// with the service endpoints. cleanup releases everything.
func newService(ctx context.Context, cfg config, logger *slog.Logger, stdout io.Writer) (*service, func(), error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*service, func(), error) {
		cleanup()
		return nil, nil, err
	}

	store, err := openDatabase(ctx, cfg, logger)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, store.Close)

	var payloads *storage.Store
	if cfg.S3.Endpoint == "" {
		emb, err := storage.StartEmbedded(ctx, logger, cfg.S3EmbedAddr, filepath.Join(cfg.DataDir, "s3"))
		if err != nil {
			return fail(fmt.Errorf("start embedded S3 store on %s: %w", cfg.S3EmbedAddr, err))
		}
		closers = append(closers, func() { _ = emb.Close() })
		logger.Info("embedded S3 store started", "url", emb.URL(), "dir", filepath.Join(cfg.DataDir, "s3"))
		// Payload reads and writes of this process go straight to the
		// embedded store's files; other processes reach it over HTTP.
		payloads, err = emb.NewStore(ctx, cfg.S3.Bucket, cfg.S3.Region)
		if err != nil {
			return fail(fmt.Errorf("S3 client: %w", err))
		}
	} else {
		var err error
		payloads, err = storage.New(ctx, cfg.S3)
		if err != nil {
			return fail(fmt.Errorf("S3 client: %w", err))
		}
	}
	if err := payloads.EnsureBucket(ctx); err != nil {
		// An unreachable external store must not keep the service down: ingest
		// answers 503 for large payloads until it is back, /readyz reports it.
		logger.Warn("S3 bucket check failed; will keep trying on use", "bucket", cfg.S3.Bucket, "error", err)
	}

	if err := ensureAdminToken(ctx, cfg, store, logger, stdout); err != nil {
		return fail(err)
	}

	reg := prometheus.NewRegistry()
	// The scheduler's latency histogram (go_sched_latencies_seconds: how long
	// runnable goroutines waited for a CPU) tells a starved process from a
	// slow database: a claim that PostgreSQL ran in 2 ms is seen in 30 when
	// the goroutine waiting for its answer waits that long to run.
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	tr := tracer(nil)
	if cfg.Tracing {
		tp, shutdown, err := newTracerProvider(ctx, logger)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, shutdown)
		tr = tracer(tp)
		logger.Info("tracing on: exporting spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_*)")
	}

	th := cfg.AuthThrottle
	th.Registerer = reg
	s := &service{cfg: cfg, logger: logger, db: store, store: payloads, registry: reg, stdout: stdout,
		announceToken: newAnnounceToken(), throttle: throttle.New(th), tracer: tr}
	s.echo = newRouter(s)
	return s, cleanup, nil
}

func openDatabase(ctx context.Context, cfg config, logger *slog.Logger) (*db.DB, error) {
	if err := cfg.requireKeys(); err != nil {
		return nil, err
	}
	if err := retryStartup(ctx, logger, "database", func() error { return db.EnsureDatabase(ctx, cfg.DB.SessionURL()) }); err != nil {
		return nil, err
	}
	store, err := db.Open(ctx, cfg.DB)
	if err != nil {
		return nil, err
	}
	if cfg.DB.Pooler == db.PoolerPgBouncer {
		warnSettings(ctx, store, logger)
	}
	if _, err := store.Migrate(ctx, logger); err != nil {
		store.Close()
		return nil, err
	}
	// Before anything is opened or sealed: the keys must be those of the
	// stored data, or a wrong key would seal new secrets no other process
	// can open.
	if err := checkKeys(ctx, cfg, store, logger); err != nil {
		store.Close()
		return nil, err
	}
	// Rows written before secrets were sealed are sealed now (a migration
	// has no key). Rows under an older key stay until rotate-encryption-key.
	n, err := store.SealPlaintext(ctx, resealBatch)
	if err != nil {
		store.Close()
		return nil, err
	}
	if n.Total() > 0 {
		logger.Info("sealed secrets stored in plaintext", "endpoint_secrets", n.Secrets, "endpoints", n.Endpoints,
			"carriers", n.CarrierSecrets, "ops_endpoints", n.OpsSecrets)
	}
	return store, nil
}

// warnSettings logs a warning for each timeout the pool's sessions do not
// have: behind PgBouncer in transaction mode hookrelay cannot set them at
// connection, and they come from the role (docs/operations/postgresql.md, "PgBouncer").
func warnSettings(ctx context.Context, store *db.DB, logger *slog.Logger) {
	bad, err := store.SettingMismatches(ctx)
	if err != nil {
		logger.Warn("could not read the session timeouts through the pooler", "error", err)
		return
	}
	for _, s := range bad {
		logger.Warn("behind pgbouncer the sessions lack a configured timeout; set it on the role: ALTER ROLE … IN DATABASE … SET "+s.Name+" = '"+s.Want+"ms'",
			"setting", s.Name, "want_ms", s.Want, "got_ms", s.Got)
	}
}

// retryStartup retries fn for up to 30 s, so a process started together with
// its database (or during a database restart) comes up on its own.
func retryStartup(ctx context.Context, logger *slog.Logger, what string, fn func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		var hrErr *hookrelay.Error
		if errors.As(err, &hrErr) && hrErr.Code == hookrelay.EINVALID || time.Now().After(deadline) {
			return err
		}
		logger.Warn("waiting for "+what, "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

const adminTokenSetting = db.AdminTokenSetting

// ensureAdminToken makes the stored admin token hash match
// HOOKRELAY_ADMIN_TOKEN, ending the dashboard sessions opened with another
// token, or on first start without it generates a token, stores its hash and
// prints it once.
func ensureAdminToken(ctx context.Context, cfg config, store *db.DB, logger *slog.Logger, stdout io.Writer) error {
	if cfg.AdminToken != "" {
		ended, err := ops.New(store, ops.Config{}).SetAdminToken(ctx, cfg.AdminToken)
		if err != nil {
			return err
		}
		if ended > 0 {
			// A changed HOOKRELAY_ADMIN_TOKEN: the sessions it ended say so.
			if err := audit.New(store, audit.Config{}).Record(ctx, audit.Entry{Action: "settings.admin_token",
				TargetType: "settings", TargetID: "admin_token", After: map[string]any{"sessions_ended": ended}}); err != nil {
				return err
			}
			logger.Info("admin token changed: ended the dashboard sessions opened with the previous one", "sessions", ended)
		}
		return nil
	}
	token := hookrelay.NewKey(hookrelay.AdminTokenPrefix)
	stored, err := store.SettingPutIfAbsent(ctx, adminTokenSetting, hex.EncodeToString(hookrelay.HashKey(token)))
	if err != nil {
		return err
	}
	if stored {
		fmt.Fprintf(stdout, "\nadmin token (shown once, keep it): %s\n\n", token)
	}
	return nil
}

// newRouter returns the echo instance with the service endpoints; roles add
// their routes to it.
func newRouter(s *service) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// One error handler for the whole router, whichever roles this process
	// runs: JSON, or a page under the dashboard's prefix (see startWeb).
	s.errs = httperr.New(s.logger)
	s.errs.Install(e)
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
		defer cancel()
		checks := map[string]string{"database": "ok", "s3": "ok"}
		status := http.StatusOK
		if err := s.db.Ping(ctx); err != nil {
			checks["database"], status = "unreachable", http.StatusServiceUnavailable
		}
		if err := s.store.Ping(ctx); err != nil {
			checks["s3"], status = "unreachable", http.StatusServiceUnavailable
		}
		return c.JSON(status, checks)
	})
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{})))
	return e
}
