package ingest

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimits holds one token bucket per carrier with a rate limit. The limit
// is per process: N api processes admit up to N times the configured rate.
type RateLimits struct {
	mu sync.Mutex // guards m
	m  map[int64]*rate.Limiter
}

// NewRateLimits returns the rate limits of no carrier yet.
func NewRateLimits() *RateLimits { return &RateLimits{m: map[int64]*rate.Limiter{}} }

// Allow reports whether carrierID may send one more callback now at perSec
// (0 = unlimited) and, when not, how many seconds to wait.
func (l *RateLimits) Allow(carrierID int64, perSec int) (bool, int) {
	if perSec <= 0 {
		return true, 0
	}
	l.mu.Lock()
	lim := l.m[carrierID]
	if lim == nil || lim.Limit() != rate.Limit(perSec) {
		lim = rate.NewLimiter(rate.Limit(perSec), perSec)
		l.m[carrierID] = lim
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, int(math.Ceil(max(d, time.Second).Seconds()))
	}
	return true, 0
}
