package ingest

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookrelay/hookrelay/adapter"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/filter"
)

// DefaultCacheTTL is how often Routes reloads by default
// (HOOKRELAY_INGEST_CACHE_TTL).
const DefaultCacheTTL = time.Second

// Snapshot is an immutable copy of the small configuration tables the hot
// path reads: carriers (by key hash), merchants (by name) and endpoint routes.
type Snapshot struct {
	loadedAt      time.Time
	carrierByHash map[string]db.Carrier
	// previousKeys are the keys rotations replaced, by hash, still
	// accepted until their expiry (checked at each use).
	previousKeys  map[string]db.CarrierPreviousKey
	carrierByID   map[int64]db.Carrier
	carrierByName map[string]int64
	// carrierByKeyPrefix is the carrier of each key display prefix, 0
	// where two carriers share one (CarrierByKeyPrefix).
	carrierByKeyPrefix map[string]int64
	merchantByName     map[string]int64
	routesByCarrier    map[int64][]route // endpoints whose carrier filter names the carrier
	routesAll          []route           // endpoints with no carrier filter
	unordered          map[int64]bool    // endpoints whose ordering is "none"
	// adapters are the carriers' active adapters, compiled, by carrier id.
	adapters map[int64]*compiledAdapter
	// validator checks canonical events against their types' schemas (nil:
	// no check).
	validator EventValidator
	// filterPaths are the paths every endpoint's content filter reads
	// together: the intake extracts them in the pass that reads the body
	// for the routing fields, so a filter never parses a body again.
	filterPaths []string
}

// route is an endpoint's route with its compiled content filter.
type route struct {
	db.EndpointRoute
	// filter is nil when the endpoint takes every callback.
	filter *filter.Filter
	// slots[i] is the index in Snapshot.filterPaths of filter.Paths()[i].
	slots []int
}

// match reports whether a callback whose values at the snapshot's filter
// paths are vals passes the route's filter.
func (r *route) match(vals []filter.Value) bool {
	if r.filter == nil {
		return true
	}
	var buf [8]filter.Value
	own := buf[:0]
	for _, s := range r.slots {
		own = append(own, vals[s])
	}
	return r.filter.Match(own)
}

// Routes holds the current snapshot. It is refreshed at once after this
// process changes carriers, merchants or endpoints (Refresh), when another
// process announces a change (Watch, or db.FollowConfig with SetListening),
// and by Run: every TTL while no LISTEN session follows the announcements,
// every db.ListenedRefresh while one does (db.RefreshEvery). The TTL bounds
// what a change made elsewhere costs without notifications; with them,
// db.ListenedRefresh bounds what a change that escaped them costs (the
// tables are small, one read of each per refresh).
type Routes struct {
	store     *db.DB
	ttl       time.Duration
	validator EventValidator
	cur       atomic.Pointer[Snapshot]
	// listening reports whether a LISTEN session follows the
	// configuration announcements for these routes (SetListening), and
	// failed whether the last load failed: Run then reloads by the TTL.
	listening, failed atomic.Bool
	mu                sync.Mutex // serialises loads; guards compiled
	// compiled are the adapter versions compiled by earlier loads: each
	// version is compiled once, when it becomes active.
	compiled map[adapterKey]*compiledAdapter
}

// NewRoutes returns the routes of store, reloaded every ttl once Run runs.
func NewRoutes(store *db.DB, ttl time.Duration) *Routes {
	return &Routes{store: store, ttl: ttl, compiled: map[adapterKey]*compiledAdapter{}}
}

// SetValidator has the snapshots loaded from now on check canonical events
// with v (nil: no check). Call it before the routes are used.
func (c *Routes) SetValidator(v EventValidator) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.validator = v
	c.cur.Store(nil)
}

// SetListening records whether a LISTEN session follows the configuration
// announcements for these routes and has reloaded them since it listens
// (db.FollowConfig's listening callback).
func (c *Routes) SetListening(on bool) { c.listening.Store(on) }

// every returns how often Run reloads now.
func (c *Routes) every() time.Duration {
	return db.RefreshEvery(c.ttl, c.listening.Load() && !c.failed.Load())
}

// Snapshot returns the current snapshot, loading it when none is loaded or
// it is older than twice Run's period (Run not running, or failing).
func (c *Routes) Snapshot(ctx context.Context) (*Snapshot, error) {
	if s := c.fresh(); s != nil {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.fresh(); s != nil {
		return s, nil // loaded while we waited
	}
	return c.load(ctx)
}

func (c *Routes) fresh() *Snapshot {
	if s := c.cur.Load(); s != nil && time.Since(s.loadedAt) < 2*c.every() {
		return s
	}
	return nil
}

// Refresh loads a new snapshot.
func (c *Routes) Refresh(ctx context.Context) (*Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.load(ctx)
}

// load reads the tables; c.mu must be held.
func (c *Routes) load(ctx context.Context) (*Snapshot, error) {
	s, err := c.read(ctx)
	c.failed.Store(err != nil)
	return s, err
}

// read reads the tables and stores the new snapshot; c.mu must be held.
func (c *Routes) read(ctx context.Context) (*Snapshot, error) {
	start := time.Now()
	carriers, err := c.store.CarrierAll(ctx)
	if err != nil {
		return nil, err
	}
	var merchants []db.Merchant
	for after := int64(0); ; {
		page, err := c.store.MerchantList(ctx, after, 10000)
		if err != nil {
			return nil, err
		}
		merchants = append(merchants, page...)
		if len(page) < 10000 {
			break
		}
		after = page[len(page)-1].ID
	}
	routes, err := c.store.EndpointRoutes(ctx)
	if err != nil {
		return nil, err
	}
	prev, err := c.store.CarrierPreviousKeysLive(ctx)
	if err != nil {
		return nil, err
	}
	active, err := c.store.CarrierAdapterActiveAll(ctx)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{
		loadedAt:           start,
		carrierByHash:      make(map[string]db.Carrier, len(carriers)),
		carrierByID:        make(map[int64]db.Carrier, len(carriers)),
		carrierByName:      make(map[string]int64, len(carriers)),
		carrierByKeyPrefix: make(map[string]int64, len(carriers)),
		merchantByName:     make(map[string]int64, len(merchants)),
		routesByCarrier:    map[int64][]route{},
		adapters:           compileAdapters(active, c.compiled),
		validator:          c.validator,
	}
	pathIndex := map[string]int{}
	if len(prev) > 0 {
		s.previousKeys = make(map[string]db.CarrierPreviousKey, len(prev))
		for _, k := range prev {
			s.previousKeys[string(k.APIKeyHash)] = k
		}
	}
	for _, c := range carriers {
		s.carrierByHash[string(c.APIKeyHash)] = c
		s.carrierByID[c.ID] = c
		s.carrierByName[c.Name] = c.ID
		if _, shared := s.carrierByKeyPrefix[c.APIKeyPrefix]; shared {
			s.carrierByKeyPrefix[c.APIKeyPrefix] = 0
		} else {
			s.carrierByKeyPrefix[c.APIKeyPrefix] = c.ID
		}
	}
	for _, m := range merchants {
		s.merchantByName[m.Name] = m.ID
	}
	for _, er := range routes {
		r := route{EndpointRoute: er}
		if er.Filter != "" {
			// Stored filters were validated by the API; one that no longer
			// compiles (written by another version) lets everything through
			// rather than lose callbacks.
			if f, err := filter.Parse(er.Filter); err == nil {
				r.filter = f
				for _, p := range f.Paths() {
					i, ok := pathIndex[p]
					if !ok {
						i = len(s.filterPaths)
						pathIndex[p] = i
						s.filterPaths = append(s.filterPaths, p)
					}
					r.slots = append(r.slots, i)
				}
			}
		}
		if r.Unordered {
			if s.unordered == nil {
				s.unordered = map[int64]bool{}
			}
			s.unordered[r.ID] = true
		}
		if len(r.CarrierIDs) == 0 {
			s.routesAll = append(s.routesAll, r)
			continue
		}
		for _, id := range r.CarrierIDs {
			s.routesByCarrier[id] = append(s.routesByCarrier[id], r)
		}
	}
	c.cur.Store(s)
	return s, nil
}

// Run refreshes the snapshot until ctx ends: it looks every TTL and
// reloads once the snapshot is as old as the period of db.RefreshEvery (the
// TTL unless a LISTEN session follows the announcements). Failures keep the
// old snapshot (Snapshot reloads on demand once it is too old) and bring
// the period back to the TTL until a load succeeds.
func (c *Routes) Run(ctx context.Context) {
	t := time.NewTicker(c.ttl)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if s := c.cur.Load(); s == nil || refreshDue(now.Sub(s.loadedAt), c.ttl, c.every()) {
				_, _ = c.Refresh(ctx)
			}
		}
	}
}

// refreshDue reports whether a snapshot age old is due for a reload at a
// tick of a loop that ticks every ttl and reloads every period: a snapshot
// reloaded between two ticks (by an announcement) counts as due at the
// tick nearest to its period, never a tick later.
func refreshDue(age, ttl, period time.Duration) bool {
	return age+ttl/2 >= period
}

// CarrierByKeyHash returns the carrier of an API key's hash: its current
// key, or a key a rotation replaced whose overlap has not ended.
func (s *Snapshot) CarrierByKeyHash(hash []byte) (db.Carrier, bool) {
	c, ok := s.carrierByHash[string(hash)]
	if ok || len(s.previousKeys) == 0 {
		return c, ok
	}
	k, ok := s.previousKeys[string(hash)]
	if !ok || !time.Now().Before(k.ExpiresAt) {
		return db.Carrier{}, false
	}
	c, ok = s.carrierByID[k.CarrierID]
	return c, ok
}

// CarrierByID returns carrier id, if it exists and is not deleted.
func (s *Snapshot) CarrierByID(id int64) (db.Carrier, bool) {
	c, ok := s.carrierByID[id]
	return c, ok
}

// FilterPaths are the body paths the endpoints' content filters read, in
// the order FanOut takes their values.
func (s *Snapshot) FilterPaths() []string { return s.filterPaths }

// Orderings returns, parallel to endpoints, which of them take unordered
// deliveries; nil when all take ordered ones (the usual case: no allocation).
func (s *Snapshot) Orderings(endpoints []int64) []bool {
	if len(s.unordered) == 0 {
		return nil
	}
	var out []bool
	for i, id := range endpoints {
		if s.unordered[id] {
			if out == nil {
				out = make([]bool, len(endpoints))
			}
			out[i] = true
		}
	}
	return out
}

// FanOut returns the raw endpoints a callback of carrierID with eventType
// goes to; merchantRef, when not empty, restricts them to one merchant (by
// id, or else by name); vals, the callback's values at FilterPaths, must
// pass an endpoint's content filter.
func (s *Snapshot) FanOut(carrierID int64, eventType, merchantRef string, vals []filter.Value) []int64 {
	return s.fanOut(carrierID, eventType, merchantRef, vals, false)
}

// FanOutCanonical is FanOut for the canonical endpoints, with the event's
// type and vals its envelope's values at FilterPaths.
func (s *Snapshot) FanOutCanonical(carrierID int64, eventType, merchantRef string, vals []filter.Value) []int64 {
	return s.fanOut(carrierID, eventType, merchantRef, vals, true)
}

// Adapter returns the carrier's active adapter version and its program; 0
// when it has none. A nil program with a version is a stored source that
// does not compile (err says why).
func (s *Snapshot) Adapter(carrierID int64) (version int, prog *adapter.Program, err error) {
	a := s.adapters[carrierID]
	if a == nil {
		return 0, nil, nil
	}
	return a.version, a.program, a.err
}

// Validator returns the schema validator of canonical events (nil: none).
func (s *Snapshot) Validator() EventValidator { return s.validator }

func (s *Snapshot) fanOut(carrierID int64, eventType, merchantRef string, vals []filter.Value, canonical bool) []int64 {
	merchantID := int64(-1)
	if merchantRef != "" {
		if id, err := strconv.ParseInt(merchantRef, 10, 64); err == nil {
			merchantID = id
		} else if id, ok := s.merchantByName[merchantRef]; ok {
			merchantID = id
		} else {
			return nil
		}
	}
	var out []int64
	add := func(rs []route) {
		for i := range rs {
			r := &rs[i]
			if merchantID >= 0 && r.MerchantID != merchantID {
				continue
			}
			if r.Canonical != canonical {
				continue
			}
			if len(r.EventTypes) > 0 && !slices.Contains(r.EventTypes, eventType) {
				continue
			}
			if !r.match(vals) {
				continue
			}
			out = append(out, r.ID)
		}
	}
	add(s.routesByCarrier[carrierID])
	add(s.routesAll)
	slices.Sort(out)
	return out
}

// Watch reloads the snapshot as soon as another process announces a
// configuration change (db.ListenConfig) until ctx ends, so fan-out and key
// checks follow a change made elsewhere within a notification's latency
// rather than the TTL. A lost session is opened again after a pause
// (doubling up to 30 s); the snapshot is reloaded then too, since changes
// made while it was away were not announced to it, and the TTL refresh goes
// on regardless. It needs LISTEN, which a pooler in transaction mode does
// not carry.
func (c *Routes) Watch(ctx context.Context, logger *slog.Logger) {
	c.store.FollowConfig(ctx, "hookrelay-api-config", "the routing cache", logger,
		func(ctx context.Context) { _, _ = c.Refresh(ctx) }, c.SetListening)
}

// Validator returns the schema validator of canonical events the snapshots
// check them with (nil: none).
func (c *Routes) Validator() EventValidator {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.validator
}
