package ingest

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// snapshot is an immutable copy of the small configuration tables the hot
// path reads: carriers (by key hash), merchants (by name) and endpoint routes.
type snapshot struct {
	loadedAt        time.Time
	carrierByHash   map[string]db.Carrier
	carrierByID     map[int64]db.Carrier
	carrierByName   map[string]int64
	merchantByName  map[string]int64
	routesByCarrier map[int64][]db.EndpointRoute // endpoints whose carrier filter names the carrier
	routesAll       []db.EndpointRoute           // endpoints with no carrier filter
	unordered       map[int64]bool               // endpoints whose ordering is "none"
}

// routeStore is what the cache reads.
type routeStore interface {
	CarrierAll(ctx context.Context) ([]db.Carrier, error)
	MerchantList(ctx context.Context, afterID int64, limit int) ([]db.Merchant, error)
	EndpointRoutes(ctx context.Context) ([]db.EndpointRoute, error)
}

// cache holds the current snapshot. It is refreshed at once after this
// process changes carriers, merchants or endpoints, when another process
// announces a change (Server.watchConfig), and every TTL by Run in any case:
// the TTL bounds what a missed notification costs (the tables are small,
// one read of each per refresh).
type cache struct {
	store routeStore
	ttl   time.Duration
	cur   atomic.Pointer[snapshot]
	mu    sync.Mutex // serialises loads
}

func newCache(store routeStore, ttl time.Duration) *cache {
	return &cache{store: store, ttl: ttl}
}

// get returns the current snapshot, loading it when none is loaded or it
// is older than twice the TTL (Run not running, or failing).
func (c *cache) get(ctx context.Context) (*snapshot, error) {
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

func (c *cache) fresh() *snapshot {
	if s := c.cur.Load(); s != nil && time.Since(s.loadedAt) < 2*c.ttl {
		return s
	}
	return nil
}

// refresh loads a new snapshot.
func (c *cache) refresh(ctx context.Context) (*snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.load(ctx)
}

// load reads the tables; c.mu must be held.
func (c *cache) load(ctx context.Context) (*snapshot, error) {
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
	s := &snapshot{
		loadedAt:        start,
		carrierByHash:   make(map[string]db.Carrier, len(carriers)),
		carrierByID:     make(map[int64]db.Carrier, len(carriers)),
		carrierByName:   make(map[string]int64, len(carriers)),
		merchantByName:  make(map[string]int64, len(merchants)),
		routesByCarrier: map[int64][]db.EndpointRoute{},
	}
	for _, c := range carriers {
		s.carrierByHash[string(c.APIKeyHash)] = c
		s.carrierByID[c.ID] = c
		s.carrierByName[c.Name] = c.ID
	}
	for _, m := range merchants {
		s.merchantByName[m.Name] = m.ID
	}
	for _, r := range routes {
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

// run refreshes the snapshot every TTL until ctx ends. Failures keep the old
// snapshot (get reloads on demand once it is too old).
func (c *cache) run(ctx context.Context) {
	t := time.NewTicker(c.ttl)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = c.refresh(ctx)
		}
	}
}

// orderings returns, parallel to endpoints, which of them take unordered
// deliveries; nil when all take ordered ones (the usual case: no allocation).
func (s *snapshot) orderings(endpoints []int64) []bool {
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

// fanOut returns the endpoints a callback of carrierID with eventType goes
// to; merchantRef, when not empty, restricts them to one merchant (by id, or
// else by name).
func (s *snapshot) fanOut(carrierID int64, eventType, merchantRef string) []int64 {
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
	add := func(rs []db.EndpointRoute) {
		for _, r := range rs {
			if merchantID >= 0 && r.MerchantID != merchantID {
				continue
			}
			if len(r.EventTypes) > 0 && !slices.Contains(r.EventTypes, eventType) {
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
