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
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/sso"
	"github.com/hookrelay/hookrelay/throttle"
)

// pageNeed is who may use a page or action: anyone (public), a merchant's
// session (merchant), or an operator with at least role.
type pageNeed struct {
	role     access.Role
	merchant bool
	public   bool
}

// declaredRoutes adds routes to a group, each declared with need and
// given the middleware mw.
type declaredRoutes struct {
	g      *echo.Group
	needs  map[string]pageNeed
	prefix string // the group's path
	need   pageNeed
	mw     []echo.MiddlewareFunc
}

func (r declaredRoutes) GET(path string, h echo.HandlerFunc) {
	r.needs[http.MethodGet+" "+r.prefix+path] = r.need
	r.g.GET(path, h, r.mw...)
}

func (r declaredRoutes) POST(path string, h echo.HandlerFunc) {
	r.needs[http.MethodPost+" "+r.prefix+path] = r.need
	r.g.POST(path, h, r.mw...)
}

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

	UserByEmail(ctx context.Context, email string) (db.User, error)
	UserCreate(ctx context.Context, n db.NewUser) (db.User, error)
	UserLoggedIn(ctx context.Context, id int64, now time.Time) error
	UserTOTPUse(ctx context.Context, id, step int64) (bool, error)
	UserInviteGet(ctx context.Context, tokenSHA256 []byte, now time.Time) (db.UserInvite, error)
	UserInviteAccept(ctx context.Context, tokenSHA256 []byte, n db.NewUser) (db.User, error)
	UserResetGet(ctx context.Context, tokenSHA256 []byte, now time.Time) (db.User, error)
	UserResetAccept(ctx context.Context, tokenSHA256 []byte, c db.UserCredentials) (db.User, error)
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
	// SSO, when set, offers single sign-on with an OpenID provider on the
	// login page (HOOKRELAY_OIDC_*; package sso). Nil: none.
	SSO *sso.Config
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
	// needs is what each page and action needs, by "METHOD /path"
	// (Mount fills it).
	needs map[string]pageNeed
	// sso signs operators in with an OpenID provider; nil: no single
	// sign-on (Config.SSO).
	sso *sso.Client
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
	d := &Dashboard{cfg: cfg, log: cfg.Logger, store: cfg.Store, sessions: sess, throttle: cfg.Throttle, pages: pg, needs: map[string]pageNeed{}}
	if cfg.SSO != nil {
		if d.sso, err = sso.New(*cfg.SSO); err != nil {
			return nil, fmt.Errorf("single sign-on: %w", err)
		}
	}
	return d, nil
}

// Mount registers the pages under prefix (normally "/ui") on e, and their
// error page with errs, the router's error handler: the handlers only return
// errors.
func (d *Dashboard) Mount(e *echo.Echo, prefix string, errs *httperr.Handler) {
	errs.Render(prefix, d.renderError)
	e.GET(prefix, func(c echo.Context) error { return c.Redirect(302, prefix+"/") })
	g := e.Group(prefix, d.securityHeaders)
	// Every page and action declares who may use it (pageNeed), in
	// d.needs for the route walk of the tests: public, a merchant's
	// session, or an operator with at least a role (requireRole).
	public := func(method, path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
		d.needs[method+" "+prefix+path] = pageNeed{public: true}
		g.Add(method, path, h, mw...)
	}
	op := func(method, path string, h echo.HandlerFunc, role access.Role) {
		d.needs[method+" "+prefix+path] = pageNeed{role: role}
		g.Add(method, path, h, d.authed, d.requireRole(role), d.csrf)
	}
	const get, post = http.MethodGet, http.MethodPost
	viewer, support, operator, admin, owner := access.Viewer, access.Support, access.Operator, access.Admin, access.Owner

	// ops.GET and ops.POST add operator pages that need the admin role;
	// op declares any other role.
	ops := declaredRoutes{g: g, needs: d.needs, prefix: prefix, need: pageNeed{role: admin},
		mw: []echo.MiddlewareFunc{d.authed, d.requireRole(admin), d.csrf}}
	_ = ops

	public(get, "/static/*", d.static)
	public(get, "/login", d.loginForm)
	public(post, "/login", d.login)
	public(get, "/invite", d.inviteForm)
	if d.sso != nil {
		public(get, "/sso/login", d.ssoLogin)
		public(get, "/sso/callback", d.ssoCallback)
	}
	public(post, "/invite", d.inviteAccept)
	public(get, "/reset", d.resetForm)
	public(post, "/reset", d.resetAccept)
	// Logout answers with a redirect only; a portal session in an iframe
	// takes it there.
	d.needs[post+" "+prefix+"/logout"] = pageNeed{public: true}
	g.POST("/logout", d.logout, d.portalFrame, d.authed, d.csrf)

	op(get, "/", d.overview, viewer)
	op(get, "/endpoints", d.endpoints, viewer)
	op(post, "/endpoints/:id/enable", d.endpointEnable, operator)
	op(post, "/endpoints/:id/disable", d.endpointDisable, operator)
	op(get, "/dead-letters", d.deadLetters, support)
	op(post, "/dead-letters/confirm", d.deadLettersConfirm, operator)
	op(post, "/dead-letters/apply", d.deadLettersApply, operator)
	op(get, "/deliveries/:id", d.delivery, support)
	op(post, "/deliveries/:id/retry", d.deliveryRetry, operator)
	op(get, "/messages", d.messageSearch, support)
	op(get, "/messages/:id", d.message, support)
	op(get, "/database", d.database, viewer)
	op(get, "/sessions", d.sessionList, admin)
	op(post, "/sessions/:id/revoke", d.sessionRevoke, admin)
	op(get, "/audit", d.auditLog, admin)
	op(get, "/endpoints/:id/replay", d.replayFormPage, operator)
	op(post, "/endpoints/:id/replay/confirm", d.replayConfirm, operator)
	op(post, "/endpoints/:id/replay", d.replayStart, operator)
	op(get, "/replays/:id", d.replayPage, viewer)
	op(post, "/replays/:id/cancel", d.replayCancel, operator)
	op(get, "/ops-endpoints", d.opsEndpointList, viewer)
	op(post, "/ops-endpoints", d.opsEndpointCreate, admin)
	op(get, "/ops-endpoints/:id/delete", d.opsEndpointDeleteConfirm, admin)
	op(post, "/ops-endpoints/:id/delete", d.opsEndpointDelete, admin)
	op(get, "/carriers", d.carriers, viewer)
	op(get, "/carriers/:id", d.carrier, viewer)
	op(post, "/carriers/:id/try", d.carrierTry, operator)
	op(post, "/carriers/:id/enable", d.carrierEnable, operator)
	op(post, "/carriers/:id/disable", d.carrierDisable, operator)
	op(post, "/carriers/:id/rotate-key", d.carrierRotateKey, admin)
	op(get, "/carriers/:id/edit", d.carrierEditForm, admin)
	op(post, "/carriers/:id/edit", d.carrierUpdate, admin)
	op(get, "/carriers/:id/delete", d.carrierDeleteConfirm, admin)
	op(post, "/carriers/:id/delete", d.carrierDelete, admin)
	op(get, "/users", d.users, owner)
	op(post, "/users/invite", d.userInvite, owner)
	op(post, "/users/:id/role", d.userRole, owner)
	op(post, "/users/:id/deactivate", d.userDeactivate, owner)
	op(post, "/users/:id/reactivate", d.userReactivate, owner)
	op(post, "/users/:id/reset", d.userReset, owner)
	op(get, "/event-types", d.eventTypes, viewer)
	op(get, "/event-types/new", d.eventTypeNewForm, admin)
	op(post, "/event-types", d.eventTypeCreate, admin)
	op(get, "/event-types/:name", d.eventTypeEditForm, admin)
	op(post, "/event-types/:name", d.eventTypeUpdate, admin)
	op(post, "/event-types/:name/deprecate", d.eventTypeDeprecate, admin)
	op(get, "/tokens", d.tokens, viewer)
	op(post, "/tokens", d.tokenCreate, viewer)
	op(post, "/tokens/:id/revoke", d.tokenRevoke, viewer)
	op(get, "/carriers/:id/adapters", d.carrierAdapters, viewer)
	op(post, "/carriers/:id/adapters", d.carrierAdapterSave, admin)
	op(post, "/carriers/:id/adapters/test", d.carrierAdapterTest, support)
	op(post, "/carriers/:id/adapters/on-failure", d.carrierAdapterOnFailure, admin)
	op(post, "/carriers/:id/adapters/deactivate", d.carrierAdapterActivate, admin)
	op(post, "/carriers/:id/adapters/:version/dry-run", d.carrierAdapterDryRun, admin)
	op(post, "/carriers/:id/adapters/:version/activate", d.carrierAdapterActivate, admin)

	// The portal: the pages a merchant session sees (a merchant key's
	// login or a portal link's); frameable where PortalFrameAncestors says.
	p := g.Group("/portal", d.portalFrame)
	p.GET("/open", d.portalOpenForm)
	p.POST("/open", d.portalOpen, d.sameOrigin)
	p.GET("/ended", d.portalEnded)
	for _, r := range []string{"GET /open", "POST /open", "GET /ended"} {
		method, path, _ := strings.Cut(r, " ")
		d.needs[method+" "+prefix+"/portal"+path] = pageNeed{public: true}
	}

	mg := g.Group("/m", d.portalFrame, d.authed, d.merchantOnly, d.csrf, d.writable)
	m := declaredRoutes{g: mg, needs: d.needs, prefix: prefix + "/m", need: pageNeed{merchant: true}}
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
	m.GET("/events", d.merchantEvents)
}
