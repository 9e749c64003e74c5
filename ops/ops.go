// Package ops holds the operator and merchant actions: one implementation
// used by the API (package api) and the dashboard (package web), so the two
// cannot disagree about what an action does, which values it takes or who
// may take it. Every rule of an action lives here: who may act on what
// (Actor), the endpoints' fields and URL policy, the carriers' and
// merchants' fields, the limits of dead-letter and replay selections. The
// front-ends only turn requests into these calls and their results into
// answers.
package ops

import (
	"cmp"
	"context"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ingest"
)

// Actor is on whose behalf an action runs. The zero Actor is the operator
// (the admin token), who may act on every endpoint; an Actor with a
// MerchantID acts only on that merchant's endpoints and their deliveries.
// An operator whose scope names merchants (Merchants) acts only on theirs.
type Actor struct {
	MerchantID int64
	// Merchants is an operator's scope of merchants (empty: every one).
	Merchants []int64
}

// FromPrincipal returns the Actor of a principal: a merchant key's or
// portal session's merchant, an operator with the merchants of its scope.
func FromPrincipal(p access.Principal) Actor {
	switch p.Kind {
	case access.KindMerchant, access.KindPortal:
		return Merchant(p.MerchantID)
	}
	return Actor{Merchants: p.Scope.Merchants}
}

// limited reports whether a acts on some merchants only.
func (a Actor) limited() bool { return a.MerchantID != 0 || len(a.Merchants) > 0 }

// allowsMerchant reports whether a may act on merchant id's endpoints.
func (a Actor) allowsMerchant(id int64) bool {
	if a.MerchantID != 0 {
		return id == a.MerchantID
	}
	return len(a.Merchants) == 0 || slices.Contains(a.Merchants, id)
}

// Merchant returns the Actor of merchant id.
func Merchant(id int64) Actor { return Actor{MerchantID: id} }

// Owns reports whether a may act on ep.
func (a Actor) Owns(ep db.Endpoint) bool {
	return a.allowsMerchant(ep.MerchantID)
}

// Resolver looks up a host's addresses (net.DefaultResolver in production).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

type defaultResolver struct{}

func (defaultResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// Config configures the operations. Zero fields get the defaults named
// (WithDefaults).
type Config struct {
	// Pinger sends pings to endpoints (the dispatcher). Default nil: Ping
	// answers hookrelay.EUNAVAILABLE.
	Pinger Pinger
	// AllowPrivateTargets lets endpoint and ops endpoint URLs reach
	// loopback, private and link-local addresses (tests, on-premises
	// setups; HOOKRELAY_ALLOW_PRIVATE_TARGETS). Default false.
	AllowPrivateTargets bool
	// RequireHTTPS refuses http:// endpoint and ops endpoint URLs
	// (HOOKRELAY_REQUIRE_HTTPS). Default false.
	RequireHTTPS bool
	// Resolver resolves the hosts of endpoint URLs for the URL policy
	// (checkURL). Default net.DefaultResolver.
	Resolver Resolver
	// Queues is the number of logical queues (HOOKRELAY_QUEUES), for the
	// queue TryCallback names. Default hookrelay.DefaultQueues.
	Queues int
	// Audit records every change and operator action, and every reading
	// of a message body, in the audit log (*audit.Log). Default nil:
	// nothing is recorded (tests of other parts).
	Audit Auditor
	// EventValidator checks canonical events against their types' JSON
	// Schemas in tries and dry runs, as ingest does (api.Config). Default
	// nil: no check.
	EventValidator ingest.EventValidator
	// Payloads reads the bodies offloaded to the S3 store, for dry runs and
	// parked callbacks. Default nil: such callbacks fail to load.
	Payloads PayloadReader
}

// PayloadReader is the part of storage.Store that reads offloaded bodies.
type PayloadReader interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// WithDefaults returns c with every zero field set to its default. New
// applies it.
func (c Config) WithDefaults() Config {
	if c.Resolver == nil {
		c.Resolver = defaultResolver{}
	}
	c.Queues = cmp.Or(c.Queues, hookrelay.DefaultQueues)
	return c
}

// Service carries out the actions on the database.
type Service struct {
	cfg Config
	db  *db.DB
	now func() time.Time
	// routes is the configuration as the intake reads it, for the
	// carriers' watch and TryCallback (loaded when asked, at most
	// ingest.DefaultCacheTTL old).
	routes *ingest.Routes
}

// New returns the actions on store, with the URL policy and pinger of cfg.
func New(store *db.DB, cfg Config) *Service {
	s := &Service{cfg: cfg.WithDefaults(), db: store, now: time.Now, routes: ingest.NewRoutes(store, ingest.DefaultCacheTTL)}
	s.routes.SetValidator(cfg.EventValidator)
	return s
}
