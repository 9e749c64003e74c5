// Package throttle slows down guessing of credentials: per client address,
// after a few failed authentications each further attempt must wait, the
// wait doubling with every failure up to a cap; a success forgets the
// address. The state is in memory, per process, bounded in size: N processes
// behind a balancer allow up to N times the free failures, and an attacker
// spraying addresses evicts the oldest entries instead of growing the table.
package throttle

import (
	"cmp"
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config; cmd/hookrelay uses them for its environment variables.
const (
	DefaultFree    = 5
	DefaultBase    = time.Second
	DefaultMax     = 15 * time.Minute
	DefaultEntries = 10000
)

// Surfaces label the metrics with where an authentication failed.
const (
	SurfaceAPI       = "api"
	SurfaceDashboard = "dashboard"
)

// Config configures a Throttle. Zero fields get the defaults named.
type Config struct {
	// Free is how many failures an address may have before it must wait.
	// Default DefaultFree (5).
	Free int
	// Base is the wait after the Free-th failure; each further failure
	// doubles it. Default DefaultBase (1s).
	Base time.Duration
	// Max caps the wait; an address with no failure for Max starts afresh.
	// Default DefaultMax (15m).
	Max time.Duration
	// Entries bounds how many addresses are remembered; the one that failed
	// least recently is forgotten first. Default DefaultEntries (10000).
	Entries int
	// Registerer receives the metrics (nil: they are kept unregistered).
	Registerer prometheus.Registerer
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Throttle holds the failures per client address. It is safe for
// concurrent use.
type Throttle struct {
	cfg       Config
	failures  *prometheus.CounterVec
	throttled *prometheus.CounterVec

	mu    sync.Mutex // guards byKey and order
	byKey map[string]*list.Element
	order *list.List // of *entry, most recent failure first
}

type entry struct {
	key      string
	failures int
	last     time.Time // of the last failure
	until    time.Time // no attempt before this
}

// WithDefaults returns c with every zero field set to its default. New
// applies it.
func (c Config) WithDefaults() Config {
	c.Free = cmp.Or(c.Free, DefaultFree)
	c.Base = cmp.Or(c.Base, DefaultBase)
	c.Max = cmp.Or(c.Max, DefaultMax)
	c.Entries = cmp.Or(c.Entries, DefaultEntries)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// New returns an empty Throttle.
func New(cfg Config) *Throttle {
	cfg = cfg.WithDefaults()
	t := &Throttle{
		cfg: cfg, byKey: map[string]*list.Element{}, order: list.New(),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrelay_auth_failures_total",
			Help: "Failed authentications (unknown admin token or key), by surface: api (bearer) or dashboard (login form).",
		}, []string{"surface"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrelay_auth_throttled_total",
			Help: "Authentication attempts refused with 429 because their client address failed too often, by surface.",
		}, []string{"surface"}),
	}
	for _, s := range []string{SurfaceAPI, SurfaceDashboard} {
		t.failures.WithLabelValues(s)
		t.throttled.WithLabelValues(s)
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(t.failures, t.throttled)
	}
	return t
}

// Wait reports how long addr must wait before it may try to authenticate
// (0: it may now), counting a refusal on surface, and whether addr has
// failures on record (a success must then call Succeeded).
func (t *Throttle) Wait(surface, addr string) (time.Duration, bool) {
	key := keyOf(addr)
	now := t.cfg.Now()
	t.mu.Lock()
	el, ok := t.byKey[key]
	if !ok {
		t.mu.Unlock()
		return 0, false
	}
	e := el.Value.(*entry)
	if t.stale(e, now) {
		t.remove(el)
		t.mu.Unlock()
		return 0, false
	}
	wait := e.until.Sub(now)
	t.mu.Unlock()
	if wait <= 0 {
		return 0, true
	}
	t.throttled.WithLabelValues(surface).Inc()
	return wait, true
}

// Failed records a failed authentication of addr on surface.
func (t *Throttle) Failed(surface, addr string) {
	t.failures.WithLabelValues(surface).Inc()
	key := keyOf(addr)
	now := t.cfg.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var e *entry
	if el, ok := t.byKey[key]; ok {
		e = el.Value.(*entry)
		if t.stale(e, now) {
			e.failures = 0
		}
		t.order.MoveToFront(el)
	} else {
		e = &entry{key: key}
		t.byKey[key] = t.order.PushFront(e)
		for t.order.Len() > t.cfg.Entries {
			t.remove(t.order.Back())
		}
	}
	e.failures++
	e.last = now
	if over := e.failures - t.cfg.Free; over >= 0 {
		e.until = now.Add(t.delay(over))
	}
}

// Succeeded forgets the failures of addr.
func (t *Throttle) Succeeded(addr string) {
	key := keyOf(addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.byKey[key]; ok {
		t.remove(el)
	}
}

// Len is how many addresses are remembered.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}

// delay is the wait after Free+over failures: Base doubled over times, at
// most Max.
func (t *Throttle) delay(over int) time.Duration {
	d := t.cfg.Base
	for range over {
		if d >= t.cfg.Max/2 {
			return t.cfg.Max
		}
		d *= 2
	}
	return min(d, t.cfg.Max)
}

// stale reports whether e may be forgotten at now: its wait is over and its
// last failure is Max old.
func (t *Throttle) stale(e *entry, now time.Time) bool {
	return !now.Before(e.until) && now.Sub(e.last) >= t.cfg.Max
}

func (t *Throttle) remove(el *list.Element) {
	delete(t.byKey, el.Value.(*entry).key)
	t.order.Remove(el)
}

// keyOf is the throttled unit of a client address: the address itself for
// IPv4, its /64 network for IPv6 (one host commonly holds a whole /64).
func keyOf(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// ClientAddr is the address of the request's TCP peer. X-Forwarded-For and
// the like are not read: a client can write them.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
