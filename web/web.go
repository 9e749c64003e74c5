// Package web is the ops dashboard and the merchant view under /ui/:
// server-rendered html/template pages, assets embedded in the binary,
// server-side sessions (revocable; see sessionstore.go) and CSRF tokens on every
// form that changes something.
// It reads through the db package's dashboard queries and acts through the
// operations layer (package ops) that the API uses too.
package web

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/throttle"
)

// Store is what the pages read. *db.DB implements it.
type Store interface {
	SettingGet(ctx context.Context, name string) (string, error)
	WebSessionKey(ctx context.Context, fresh string) (string, error)
	MerchantByKeyHash(ctx context.Context, hash []byte) (db.Merchant, error)
	MerchantGet(ctx context.Context, id int64) (db.Merchant, error)
	LoginSessionCreate(ctx context.Context, s db.NewLoginSession) (int64, error)
	LoginSessionValid(ctx context.Context, tokenSHA256 []byte, now time.Time) (db.LoginSession, error)
	LoginSessionSeen(ctx context.Context, id int64, now time.Time) error
	LoginSessionEnd(ctx context.Context, tokenSHA256 []byte, now time.Time) error

	OverviewGet(ctx context.Context, queues int, backlog bool) (db.Overview, error)
	StatSamplesSince(ctx context.Context, since time.Time) ([]db.StatSample, error)
	EndpointStatusList(ctx context.Context, merchantID, afterID int64, limit int) ([]db.EndpointStatus, error)
	DeliveryCountByEndpoint(ctx context.Context, endpointIDs []int64, limit int) (map[int64]int64, error)
	DeliveryPullLag(ctx context.Context, endpointIDs []int64, limit int64) ([]db.PullLag, error)
	DeadLetterList(ctx context.Context, f db.DeadLetterFilter, page db.DeadLetterPage, limit int) ([]db.DeadLetter, error)
	DeadLetterCount(ctx context.Context, f db.DeadLetterFilter, limit int) (int64, error)
	DeliveryRead(ctx context.Context, id int64) (db.DeliveryRecord, error)
	AttemptListRecent(ctx context.Context, endpointID int64, since, before time.Time, limit int) ([]db.Attempt, error)
	DeliveryListPendingNewest(ctx context.Context, endpointID int64, limit int) ([]db.PendingDelivery, error)
	MessageSearch(ctx context.Context, f db.MessageFilter, after db.MessagePosition, limit int) ([]db.MessageSummary, error)
	MessageRead(ctx context.Context, id int64, receivedAt *time.Time, merchantID int64) (db.MessageRecord, error)
	HealthSnapshot(ctx context.Context) (db.Health, error)
	Partitions(ctx context.Context) ([]db.Partition, error)
	PoolStats() (acquired, idle, max int32)

	EndpointSecretsActive(ctx context.Context, id int64) ([]db.EndpointSecret, error)

	PortalLinkRedeem(ctx context.Context, linkSHA256 []byte, r db.PortalRedemption) (db.LoginSession, error)
	CarrierAll(ctx context.Context) ([]db.Carrier, error)
	EndpointList(ctx context.Context, merchantID, afterID int64, limit int) ([]db.Endpoint, error)
}

// ReplicaStore is a Store on a read replica that can tell how current it is.
// *db.DB implements it.
type ReplicaStore interface {
	Store
	ReplicaStatus(ctx context.Context) (db.ReplicaStatus, error)
}

// Presigner makes a time-limited GET link to a stored payload.
type Presigner interface {
	Presign(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// Config configures the dashboard. Zero fields get the defaults named
// (WithDefaults).
type Config struct {
	// Logger receives failures of page handlers. Default slog.Default().
	Logger *slog.Logger
	// Store reads the pages. Required.
	Store Store
	// Ops takes the actions (the API takes the same ones): create, edit,
	// enable, disable and delete endpoints, retry and discard dead letters,
	// retry deliveries, rotate secrets, send test events, replay, manage
	// sessions and ops endpoints; it checks who may take them and the
	// values they take. Required.
	Ops *ops.Service
	// Replica, when set, serves the pages that only read — the overview and
	// its charts, the endpoint list, the dead letters, message search and the
	// message page — from a read replica (HOOKRELAY_DATABASE_REPLICA_URL);
	// each of those pages says how far behind the primary it is. Sessions,
	// actions, and every other page use Store. Nil: Store.
	Replica ReplicaStore
	// Presigner links offloaded payloads; nil shows the object key only.
	Presigner Presigner
	// PortalFrameAncestors are the origins that may embed the merchant
	// portal in an iframe (CSP frame-ancestors of the portal's pages;
	// HOOKRELAY_PORTAL_FRAME_ANCESTORS). With any, the cookies of sessions
	// opened by portal links are SameSite=None; Secure. Default none: no
	// page is frameable. Operator pages never are.
	PortalFrameAncestors []string
	// Queues is the number of logical queues. Default hookrelay.DefaultQueues.
	Queues int
	// SessionTTL is how long a login lasts. Default 12h.
	SessionTTL time.Duration
	// SecureCookie sets the Secure flag on cookies (serve over HTTPS). Default false.
	SecureCookie bool
	// Throttle delays logins from client addresses that failed too often.
	// Default a Throttle of this dashboard's own, with unregistered metrics;
	// a process shares one with its API (cmd/hookrelay).
	Throttle *throttle.Throttle
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with every zero field set to its default. New
// applies it.
func (c Config) WithDefaults() Config {
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Queues = cmp.Or(c.Queues, hookrelay.DefaultQueues)
	c.SessionTTL = cmp.Or(c.SessionTTL, 12*time.Hour)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Throttle == nil {
		c.Throttle = throttle.New(throttle.Config{})
	}
	return c
}

// Dashboard serves the /ui/ pages.
type Dashboard struct {
	cfg      Config
	log      *slog.Logger
	store    Store
	sessions *sessions
	throttle *throttle.Throttle
	pages    *pages
}

// New builds the dashboard; it loads (or creates) the session signing key
// stored in the settings table.
func New(ctx context.Context, cfg Config) (*Dashboard, error) {
	cfg = cfg.WithDefaults()
	if cfg.Store == nil || cfg.Ops == nil {
		return nil, errors.New("dashboard: Store and Ops are required")
	}
	sess, err := newSessions(ctx, cfg.Store, cfg.SessionTTL, cfg.SecureCookie, len(cfg.PortalFrameAncestors) > 0, cfg.Now)
	if err != nil {
		return nil, err
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Dashboard{cfg: cfg, log: cfg.Logger, store: cfg.Store, sessions: sess, throttle: cfg.Throttle, pages: pg}, nil
}

// Mount registers the pages under prefix (normally "/ui") on e, and their
// error page with errs, the router's error handler: the handlers only return
// errors.
func (d *Dashboard) Mount(e *echo.Echo, prefix string, errs *httperr.Handler) {
	errs.Render(prefix, d.renderError)
	e.GET(prefix, func(c echo.Context) error { return c.Redirect(302, prefix+"/") })
	g := e.Group(prefix, d.securityHeaders)
	g.GET("/static/*", d.static)
	g.GET("/login", d.loginForm)
	g.POST("/login", d.login)
	// Logout answers with a redirect only; a portal session in an iframe
	// takes it there.
	g.POST("/logout", d.logout, d.portalFrame, d.authed, d.csrf)

	ops := g.Group("", d.authed, d.adminOnly, d.csrf)
	ops.GET("/", d.overview)
	ops.GET("/endpoints", d.endpoints)
	ops.POST("/endpoints/:id/enable", d.endpointEnable)
	ops.POST("/endpoints/:id/disable", d.endpointDisable)
	ops.GET("/dead-letters", d.deadLetters)
	ops.POST("/dead-letters/confirm", d.deadLettersConfirm)
	ops.POST("/dead-letters/apply", d.deadLettersApply)
	ops.GET("/deliveries/:id", d.delivery)
	ops.POST("/deliveries/:id/retry", d.deliveryRetry)
	ops.GET("/messages", d.messageSearch)
	ops.GET("/messages/:id", d.message)
	ops.GET("/database", d.database)
	ops.GET("/sessions", d.sessionList)
	ops.POST("/sessions/:id/revoke", d.sessionRevoke)
	ops.GET("/endpoints/:id/replay", d.replayFormPage)
	ops.POST("/endpoints/:id/replay/confirm", d.replayConfirm)
	ops.POST("/endpoints/:id/replay", d.replayStart)
	ops.GET("/replays/:id", d.replayPage)
	ops.POST("/replays/:id/cancel", d.replayCancel)
	ops.GET("/ops-endpoints", d.opsEndpointList)
	ops.POST("/ops-endpoints", d.opsEndpointCreate)
	ops.GET("/ops-endpoints/:id/delete", d.opsEndpointDeleteConfirm)
	ops.POST("/ops-endpoints/:id/delete", d.opsEndpointDelete)
	ops.GET("/carriers", d.carriers)
	ops.GET("/carriers/:id", d.carrier)
	ops.POST("/carriers/:id/try", d.carrierTry)
	ops.GET("/carriers/:id/adapters", d.carrierAdapters)
	ops.POST("/carriers/:id/adapters", d.carrierAdapterSave)
	ops.POST("/carriers/:id/adapters/test", d.carrierAdapterTest)
	ops.POST("/carriers/:id/adapters/on-failure", d.carrierAdapterOnFailure)
	ops.POST("/carriers/:id/adapters/deactivate", d.carrierAdapterActivate)
	ops.POST("/carriers/:id/adapters/:version/dry-run", d.carrierAdapterDryRun)
	ops.POST("/carriers/:id/adapters/:version/activate", d.carrierAdapterActivate)
	ops.POST("/carriers/:id/enable", d.carrierEnable)
	ops.POST("/carriers/:id/disable", d.carrierDisable)
	ops.POST("/carriers/:id/rotate-key", d.carrierRotateKey)
	ops.GET("/carriers/:id/edit", d.carrierEditForm)
	ops.POST("/carriers/:id/edit", d.carrierUpdate)
	ops.GET("/carriers/:id/delete", d.carrierDeleteConfirm)
	ops.POST("/carriers/:id/delete", d.carrierDelete)

	// The portal: the pages a merchant session sees (a merchant key's
	// login or a portal link's); frameable where PortalFrameAncestors says.
	p := g.Group("/portal", d.portalFrame)
	p.GET("/open", d.portalOpenForm)
	p.POST("/open", d.portalOpen, d.sameOrigin)
	p.GET("/ended", d.portalEnded)

	m := g.Group("/m", d.portalFrame, d.authed, d.merchantOnly, d.csrf, d.writable)
	m.GET("/", d.merchantHome)
	m.GET("/endpoints/new", d.endpointNewForm)
	m.POST("/endpoints", d.endpointCreate)
	m.GET("/endpoints/:id", d.merchantEndpoint)
	m.GET("/endpoints/:id/edit", d.endpointEditForm)
	m.POST("/endpoints/:id", d.endpointUpdate)
	m.POST("/endpoints/:id/enable", d.merchantEnable)
	m.POST("/endpoints/:id/disable", d.merchantDisable)
	m.GET("/endpoints/:id/delete", d.endpointDeleteConfirm)
	m.POST("/endpoints/:id/delete", d.endpointDelete)
	m.GET("/endpoints/:id/deliveries", d.merchantDeliveries)
	m.POST("/endpoints/:id/reveal", d.merchantReveal)
	m.POST("/endpoints/:id/rotate", d.merchantRotate)
	m.POST("/endpoints/:id/test", d.merchantPing)
	m.GET("/deliveries/:id", d.merchantDelivery)
	m.GET("/messages", d.merchantMessageSearch)
	m.POST("/deliveries/:id/retry", d.merchantRetry)
	m.GET("/endpoints/:id/replay", d.replayFormPage)
	m.POST("/endpoints/:id/replay/confirm", d.replayConfirm)
	m.POST("/endpoints/:id/replay", d.replayStart)
	m.GET("/replays/:id", d.replayPage)
	m.POST("/replays/:id/cancel", d.replayCancel)
}
