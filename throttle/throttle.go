// Package throttle slows down guessing of credentials: per client address,
// after a few failed authentications each further attempt must wait, the
// wait doubling with every failure up to a cap. Failures are forgiven with
// time only, never by a success: whoever holds one valid credential must
// not get more guesses at others than anyone else from its address (a
// success that cleared the count gave a key holder Free guesses per wait,
// forever). The state is in memory, per process, bounded in size: N
// processes behind a balancer allow up to N times the free failures, and an
// attacker spraying addresses evicts the oldest entries instead of growing
// the table.
//
// The rule: each failure of an address counts, and its failures drain at
// Free per Max (one every Max/Free: 3 minutes by default), all at once when
// it has had no failure for Max. After a failure that leaves Free or more
// counted, every attempt from the address waits Base, doubled for each
// failure counted beyond Free, at most Max (the callers answer 429,
// whatever credential it sends, so a wait answers nothing about any). A
// success changes nothing. So a client that makes the odd mistake (fewer
// than Free still counted) never waits; one that made many waits as the
// schedule says and is let in with its valid credential as soon as its wait
// ends; a steady guesser, holding a valid credential or not, gets about one
// guess per Max/Free.
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
	// Free is how many failures an address may have counted before it
	// must wait; they drain at Free per Max. Default DefaultFree (5).
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
	key string
	// drained is when the failures counted would all be forgiven at
	// Free per Max: each failure moves it one forgiveness interval on
	// (counted).
	drained time.Time
	last    time.Time // of the last failure
	until   time.Time // no attempt before this
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
// failures on record. A success is not reported: it forgives nothing.
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
			e.drained = time.Time{}
		}
		t.order.MoveToFront(el)
	} else {
		e = &entry{key: key}
		t.byKey[key] = t.order.PushFront(e)
		for t.order.Len() > t.cfg.Entries {
			t.remove(t.order.Back())
		}
	}
	if e.drained.Before(now) {
		e.drained = now
	}
	if t.counted(e, now) < t.cfg.Free+maxOver {
		e.drained = e.drained.Add(t.forgiveEvery())
	}
	e.last = now
	if over := t.counted(e, now) - t.cfg.Free; over >= 0 {
		e.until = now.Add(t.delay(over))
	}
}

// maxOver bounds the failures counted beyond Free: the wait reached Max
// long before (Base doubled 62 times overflows a Duration), and a flood of
// concurrent failures cannot push the forgiving into the far future.
const maxOver = 62

// forgiveEvery is how often one failure of an address is forgiven: Free
// of them per Max.
func (t *Throttle) forgiveEvery() time.Duration {
	return max(t.cfg.Max/time.Duration(t.cfg.Free), 1)
}

// counted is how many failures of e still count at now: those not yet
// forgiven, a part-forgiven one whole.
func (t *Throttle) counted(e *entry, now time.Time) int {
	left := e.drained.Sub(now)
	if left <= 0 {
		return 0
	}
	every := t.forgiveEvery()
	return int((left + every - 1) / every)
}

// Len is how many addresses are remembered.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}

// delay is the wait after a failure that leaves Free+over counted: Base
// doubled over times, at most Max.
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
