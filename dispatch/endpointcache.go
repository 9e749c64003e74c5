package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookrelay/hookrelay/db"
)

// endpointState is a cached endpoint with its per-endpoint limits.
type endpointState struct {
	cfg      db.EndpointConfig
	loadedAt time.Time
	// version is the configuration version known before cfg was read, so
	// cfg reflects every change up to it.
	version int64
	// slots bounds deliveries in flight to the endpoint (max_in_flight).
	slots chan struct{}
	// limiter enforces rate_limit_per_sec; nil when unlimited.
	limiter *rate.Limiter
	// freed is when a slot was last given back (unix nanoseconds): the
	// longer ago, the slower the endpoint, the longer deliveries step aside.
	freed *atomic.Int64
	// full is the cache's set of endpoints with every slot taken.
	full *fullSet
}

// fullSet is the endpoints whose max_in_flight this dispatcher has in
// flight: the claim passes over their rows, which would only step aside.
// An endpoint joins when a delivery takes its last slot and leaves when a
// slot is given back; a race between the two leaves it in (skipped until its
// next slot comes back, which a delivery in flight always does) or out (some
// of its rows claimed and stepping aside, as without the set).
type fullSet struct {
	mu  sync.Mutex
	ids map[int64]struct{}
	// filled counts the endpoints that joined the set, ever: a claim loop
	// that sees it move since its last claim knows an endpoint's slots,
	// not its due rows, bounded what it could claim.
	filled atomic.Uint64
}

func (f *fullSet) set(id int64, full bool) {
	f.mu.Lock()
	if full {
		if _, ok := f.ids[id]; !ok {
			f.filled.Add(1)
		}
		f.ids[id] = struct{}{}
	} else {
		delete(f.ids, id)
	}
	f.mu.Unlock()
}

// list returns up to n of the endpoints in the set (nil when none).
func (f *fullSet) list(n int) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ids) == 0 {
		return nil
	}
	out := make([]int64, 0, min(len(f.ids), n))
	for id := range f.ids {
		if len(out) == n {
			break
		}
		out = append(out, id)
	}
	return out
}

// stepAside returns how long a delivery should stay away from the endpoint
// when all its slots are busy: about as long as no slot has come free,
// between lo and hi.
func (e *endpointState) stepAside(now time.Time, lo, hi time.Duration) time.Duration {
	since := now.Sub(time.Unix(0, e.freed.Load()))
	return min(max(since, lo), hi)
}

// acquire takes an in-flight slot and a rate-limiter token, waiting at most
// maxWait for them. When the endpoint is saturated it returns ok = false and
// how long the delivery should step aside (it is released, so it never holds
// one of the dispatcher's delivery slots while a slow or hanging endpoint
// keeps all of its own busy). release must be called when ok.
func (e *endpointState) acquire(ctx context.Context, maxWait, saturatedDelay time.Duration) (ok bool, delay time.Duration, err error) {
	select {
	case e.slots <- struct{}{}:
	default:
		t := time.NewTimer(maxWait)
		select {
		case e.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			return false, e.stepAside(time.Now(), saturatedDelay, maxStepAside), nil
		case <-ctx.Done():
			t.Stop()
			return false, 0, ctx.Err()
		}
	}
	if len(e.slots) == cap(e.slots) {
		e.full.set(e.cfg.ID, true)
	}
	if e.limiter != nil {
		r := e.limiter.Reserve()
		d := r.Delay()
		if d > maxWait {
			r.Cancel()
			e.giveBack()
			return false, d, nil
		}
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				e.giveBack()
				return false, 0, ctx.Err()
			}
		}
	}
	return true, 0, nil
}

func (e *endpointState) release() {
	e.freed.Store(time.Now().UnixNano())
	e.giveBack()
}

// giveBack returns a slot taken by acquire.
func (e *endpointState) giveBack() {
	<-e.slots
	// Every time, not only when this endpoint was marked full: a flag to
	// skip the lock would race with acquire's marking and could leave an
	// endpoint marked with no delivery left to unmark it.
	e.full.set(e.cfg.ID, false)
}

// maxStepAside caps how long a delivery steps aside from a saturated
// endpoint.
const maxStepAside = 10 * time.Second

// endpointCache holds endpoint settings and secrets for ttl, loading all the
// endpoints of a claimed batch that are missing or stale in one query. An
// entry is stale too once a newer configuration version is known (from a
// claim, which reads it in its own snapshot, or from the configuration
// channel): a change with a 2xx holds for every attempt that starts after.
// Each endpoint's secrets are opened on its own: one that cannot be opened
// is cached as such, left out of what get returns (it cannot be delivered
// to as configured) and listed in unreadable, so its deliveries are parked
// while the others of the batch go.
type endpointCache struct {
	db  *db.DB
	ttl time.Duration
	now func() time.Time
	// maxSlots caps any endpoint's in-flight deliveries below max_in_flight
	// when the dispatcher has few delivery slots, so a few slow endpoints
	// cannot take them all.
	maxSlots int

	// known is the newest configuration version seen.
	known atomic.Int64

	mu sync.Mutex // mu guards m
	m  map[int64]*endpointState

	full *fullSet
	// unreadable is the endpoints whose secrets cannot be opened; guarded
	// by mu.
	unreadable *unreadableSet
}

// observe records that the configuration is at version v or later.
func (c *endpointCache) observe(v int64) {
	for {
		cur := c.known.Load()
		if v <= cur || c.known.CompareAndSwap(cur, v) {
			return
		}
	}
}

// current reports whether st reflects every configuration change known.
func (c *endpointCache) current(st *endpointState) bool {
	return st.version >= c.known.Load()
}

// newEndpointCache returns an empty cache; unreadableStale is how long an
// endpoint whose secrets cannot be opened stays counted once nothing of it
// is seen (unreadableCount).
func newEndpointCache(store *db.DB, ttl time.Duration, now func() time.Time, maxSlots int, logger *slog.Logger, unreadableStale time.Duration) *endpointCache {
	return &endpointCache{db: store, ttl: ttl, now: now, maxSlots: max(maxSlots, 1), m: map[int64]*endpointState{},
		full:       &fullSet{ids: map[int64]struct{}{}},
		unreadable: &unreadableSet{db: store, logger: logger, stale: unreadableStale, m: map[int64]*unreadableEntry{}}}
}

// get returns the states of ids (absent for endpoints that do not exist or
// whose secrets cannot be opened: parked reports those), refreshing first
// the entries that are older than ttl or than version (the configuration
// version the caller saw; 0 when it saw none).
func (c *endpointCache) get(ctx context.Context, ids []int64, version int64) (map[int64]*endpointState, error) {
	c.observe(version)
	version = c.known.Load()
	now := c.now()
	out := make(map[int64]*endpointState, len(ids))
	var load []int64
	c.mu.Lock()
	for _, id := range ids {
		if _, seen := out[id]; seen {
			continue
		}
		st, ok := c.m[id]
		if ok && now.Sub(st.loadedAt) < c.ttl && st.version >= version {
			out[id] = st
			continue
		}
		out[id] = nil
		load = append(load, id)
	}
	c.mu.Unlock()
	if len(load) > 0 {
		rows, err := c.db.EndpointConfigLoad(ctx, load)
		if err != nil {
			return nil, err
		}
		var records []func(context.Context)
		c.mu.Lock()
		for _, r := range rows {
			out[r.ID] = c.store(r, now, version)
			if rec := c.unreadable.note(r, now); rec != nil {
				records = append(records, rec)
			}
		}
		for _, id := range load {
			if out[id] == nil {
				c.unreadable.forget(id)
			}
		}
		c.mu.Unlock()
		for _, rec := range records {
			rec(ctx)
		}
	}
	for id, st := range out {
		if st == nil || st.cfg.Unreadable != "" {
			delete(out, id)
		}
	}
	return out, nil
}

// parked reports whether endpoint id's secrets could not be opened when it
// was last loaded: its deliveries wait without an attempt.
func (c *endpointCache) parked(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unreadable.parked(id, c.now())
}

// unreadableCount is how many endpoints' secrets cannot be opened, of
// those seen lately.
func (c *endpointCache) unreadableCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unreadable.count(c.now())
}

// store caches cfg, read at configuration version or later, keeping the old
// state's limits when they did not change (so slots in use stay counted).
// c.mu must be held.
func (c *endpointCache) store(cfg db.EndpointConfig, now time.Time, version int64) *endpointState {
	old := c.m[cfg.ID]
	st := &endpointState{cfg: cfg, loadedAt: now, version: version, full: c.full}
	if old != nil && old.cfg.MaxInFlight == cfg.MaxInFlight {
		st.slots, st.freed = old.slots, old.freed
	} else {
		st.slots = make(chan struct{}, max(min(cfg.MaxInFlight, c.maxSlots), 1))
		st.freed = new(atomic.Int64)
		st.freed.Store(now.UnixNano())
	}
	if cfg.RateLimitPerSec > 0 {
		if old != nil && old.limiter != nil && old.cfg.RateLimitPerSec == cfg.RateLimitPerSec {
			st.limiter = old.limiter
		} else {
			st.limiter = rate.NewLimiter(rate.Limit(cfg.RateLimitPerSec), max(1, cfg.RateLimitPerSec/10))
		}
	}
	c.m[cfg.ID] = st
	return st
}

// forget drops an endpoint so the next get reloads it (after a 410, say).
func (c *endpointCache) forget(id int64) {
	c.mu.Lock()
	delete(c.m, id)
	c.unreadable.forget(id)
	c.mu.Unlock()
}
