package eventtype

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// DefaultTTL is how often a Catalog looks for changes by default when no
// announcement told it of one.
const DefaultTTL = time.Second

// Config configures a Catalog. Zero fields get the defaults named.
type Config struct {
	// TTL is how often Run checks the configuration version and reloads
	// the catalog when it moved: the bound on how late a change is seen
	// when an announcement (Watch) is missed or not listened for. Default
	// DefaultTTL (1s).
	TTL time.Duration
	// Logger receives the warnings of Watch and of schemas that do not
	// compile. Default slog.Default().
	Logger *slog.Logger
}

// Catalog validates events' data against the current schemas of their
// types. It holds each type's current version compiled (once per type and
// version) and follows changes made by any process: Refresh after a change
// of this process, Watch for the announcements of a change anywhere (the
// configuration version's NOTIFY, migration 00120), and Run every TTL in
// any case. It is safe for concurrent use.
type Catalog struct {
	store *db.DB
	cfg   Config
	cur   atomic.Pointer[snapshot]
	mu    sync.Mutex // serialises loads
	// listening reports whether a LISTEN session follows the
	// configuration announcements for the catalog (SetListening), and
	// failed whether the last load failed: Run then checks by the TTL.
	listening, failed atomic.Bool
}

// SetListening records whether a LISTEN session follows the configuration
// announcements for the catalog and has reloaded it since it listens
// (db.FollowConfig's listening callback): Run then checks the configuration
// version every db.ListenedRefresh instead of every TTL.
func (c *Catalog) SetListening(on bool) { c.listening.Store(on) }

// every returns how often Run checks the configuration version now.
func (c *Catalog) every() time.Duration {
	return db.RefreshEvery(c.cfg.TTL, c.listening.Load() && !c.failed.Load())
}

// snapshot is the compiled catalog at one configuration version.
type snapshot struct {
	loadedAt      time.Time
	configVersion int64
	types         map[string]*compiled
}

// compiled is an event type's current version, compiled.
type compiled struct {
	version    int
	deprecated bool
	schema     *jsonschema.Schema // nil when err
	err        error              // the stored schema does not compile
}

// NewCatalog returns the catalog of store's event types; it loads on first
// use.
func NewCatalog(store *db.DB, cfg Config) *Catalog {
	cfg.TTL = cmp.Or(cfg.TTL, DefaultTTL)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Catalog{store: store, cfg: cfg}
}

// Validate validates an event's data (JSON) against the current schema of
// eventType and returns that schema's version. A deprecated type validates
// as any other: deprecation asks merchants to move, it refuses nothing. An
// unknown type, data that is not JSON or does not match are
// hookrelay.EINVALID errors whose message names the type, version, the
// failing instance path and keyword (at most MaxErrorLength bytes); a
// catalog that cannot be loaded is hookrelay.EUNAVAILABLE.
func (c *Catalog) Validate(ctx context.Context, eventType string, data []byte) (version int, err error) {
	s, err := c.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	t := s.types[eventType]
	if t == nil {
		return 0, hookrelay.Errorf(hookrelay.EINVALID, "unknown event type %q", short(eventType))
	}
	if t.err != nil {
		return t.version, hookrelay.WrapError(hookrelay.EINTERNAL,
			fmt.Sprintf("the schema of event type %s version %d does not compile", eventType, t.version), t.err)
	}
	v, err := decode(data)
	if err != nil {
		return t.version, hookrelay.Errorf(hookrelay.EINVALID, "%s event data is not valid JSON: %s", eventType, short(err.Error()))
	}
	if err := t.schema.Validate(v); err != nil {
		return t.version, hookrelay.Errorf(hookrelay.EINVALID, "%s",
			short(fmt.Sprintf("%s event data does not match version %d of its schema: %s", eventType, t.version, describe(err))))
	}
	return t.version, nil
}

// Info is what the catalog knows of an event type.
type Info struct {
	Version    int
	Deprecated bool
}

// Lookup returns the current version of eventType and whether it is
// deprecated; ok is false for an unknown type.
func (c *Catalog) Lookup(ctx context.Context, eventType string) (info Info, ok bool, err error) {
	s, err := c.snapshot(ctx)
	if err != nil {
		return Info{}, false, err
	}
	t := s.types[eventType]
	if t == nil {
		return Info{}, false, nil
	}
	return Info{Version: t.version, Deprecated: t.deprecated}, true, nil
}

// snapshot returns the current snapshot, loading it when there is none or
// it is older than twice Run's period (Run not running, or failing): a look at
// the configuration version, and a reload only when it moved.
func (c *Catalog) snapshot(ctx context.Context) (*snapshot, error) {
	if s := c.fresh(); s != nil {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.fresh(); s != nil {
		return s, nil
	}
	return c.load(ctx, false)
}

func (c *Catalog) fresh() *snapshot {
	if s := c.cur.Load(); s != nil && time.Since(s.loadedAt) < 2*c.every() {
		return s
	}
	return nil
}

// Refresh reloads the catalog (the schemas of versions already compiled
// are kept).
func (c *Catalog) Refresh(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.load(ctx, true)
	return err
}

// load reads the configuration version and, when force or it moved, the
// current schemas, compiling those of versions not compiled yet; c.mu must
// be held.
func (c *Catalog) load(ctx context.Context, force bool) (*snapshot, error) {
	s, err := c.read(ctx, force)
	c.failed.Store(err != nil)
	return s, err
}

// read is load without the record of its failure.
func (c *Catalog) read(ctx context.Context, force bool) (*snapshot, error) {
	start := time.Now()
	cv, err := c.store.ConfigVersion(ctx)
	if err != nil {
		return nil, err
	}
	prev := c.cur.Load()
	if !force && prev != nil && prev.configVersion == cv {
		s := *prev
		s.loadedAt = start
		c.cur.Store(&s)
		return &s, nil
	}
	rows, err := c.store.EventTypeSchemas(ctx)
	if err != nil {
		return nil, err
	}
	s := &snapshot{loadedAt: start, configVersion: cv, types: make(map[string]*compiled, len(rows))}
	for _, r := range rows {
		if prev != nil {
			if old := prev.types[r.Name]; old != nil && old.version == r.Version {
				s.types[r.Name] = &compiled{version: old.version, deprecated: r.Deprecated, schema: old.schema, err: old.err}
				continue
			}
		}
		sch, err := Compile(r.Schema)
		if err != nil {
			c.cfg.Logger.Warn("event type schema does not compile; its events fail validation", "type", r.Name, "version", r.Version, "error", err)
		}
		s.types[r.Name] = &compiled{version: r.Version, deprecated: r.Deprecated, schema: sch, err: err}
	}
	c.cur.Store(s)
	return s, nil
}

// Run checks the configuration version until ctx ends and reloads the
// catalog when it moved: every TTL, or every db.ListenedRefresh while a
// LISTEN session follows the announcements (SetListening; db.RefreshEvery).
// Failures keep the old snapshot and bring the period back to the TTL
// until a load succeeds.
func (c *Catalog) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.TTL)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if s := c.cur.Load(); s != nil && now.Sub(s.loadedAt)+c.cfg.TTL/2 < c.every() {
				continue // loaded (announced) within the period
			}
			c.mu.Lock()
			_, _ = c.load(ctx, false)
			c.mu.Unlock()
		}
	}
}

// Watch listens for the configuration announcements of every process and
// reloads the catalog at each, until ctx ends; a lost session is opened
// again with back-off (the TTL covers the gap). It needs a direct session
// (LISTEN), which a pooler in transaction mode does not carry.
func (c *Catalog) Watch(ctx context.Context) {
	c.store.FollowConfig(ctx, "hookrelay-event-types", "the event type catalog", c.cfg.Logger,
		func(ctx context.Context) { _ = c.Refresh(ctx) }, c.SetListening)
}
