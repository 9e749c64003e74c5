package db

import (
	"context"
	"fmt"
	"time"
)

// EndpointConfig is everything delivering to an endpoint takes: where,
// how (signing secrets, headers, credentials, limits) and its circuit.
type EndpointConfig struct {
	ID              int64
	URL             string
	Status          string // enabled | disabled | deleted
	MaxInFlight     int
	RateLimitPerSec int    // 0 = unlimited
	PayloadMode     string // inline | reference
	RetrySchedule   []time.Duration
	Timeout         time.Duration
	// Secrets are every secret that may sign now, newest first.
	Secrets             []string
	ConsecutiveFailures int
	CircuitState        string // closed | open | half_open

	// Headers are the custom request headers (nil when none).
	Headers map[string]string
	// Auth is the credentials requests carry (nil when none).
	Auth *EndpointAuth
	// OmitTraceparent reports whether requests go without a traceparent
	// header even when tracing is on.
	OmitTraceparent bool
}

// EndpointConfigLoad returns the dispatch settings of the given endpoints
// (missing ids are left out).
func (db *DB) EndpointConfigLoad(ctx context.Context, ids []int64) ([]EndpointConfig, error) {
	rows, err := db.q.EndpointListForDispatch(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("load endpoints: %w", unavailable(err))
	}
	out := make([]EndpointConfig, len(rows))
	for i, r := range rows {
		sched := make([]time.Duration, len(r.RetryScheduleMs))
		for j, ms := range r.RetryScheduleMs {
			sched[j] = time.Duration(ms) * time.Millisecond
		}
		secrets := make([]string, len(r.Secrets))
		for j, s := range r.Secrets {
			if secrets[j], err = db.open(purposeSecret, s); err != nil {
				return nil, fmt.Errorf("endpoint %d secret: %w", r.ID, err)
			}
		}
		headers, err := db.openHeaders(r.Headers)
		if err != nil {
			return nil, fmt.Errorf("endpoint %d: %w", r.ID, err)
		}
		auth, err := db.openAuth(r.Auth)
		if err != nil {
			return nil, fmt.Errorf("endpoint %d: %w", r.ID, err)
		}
		out[i] = EndpointConfig{
			ID: r.ID, URL: r.URL, Status: r.Status, MaxInFlight: int(r.MaxInFlight),
			RateLimitPerSec: int(r.RateLimitPerSec), PayloadMode: r.PayloadMode,
			RetrySchedule: sched, Timeout: time.Duration(r.TimeoutMs) * time.Millisecond,
			Secrets: secrets, Headers: headers, Auth: auth, ConsecutiveFailures: int(r.ConsecutiveFailures), CircuitState: r.CircuitState,
			OmitTraceparent: !r.SendTraceparent,
		}
	}
	return out, nil
}

// EndpointHealthOpenCount counts endpoints whose circuit is not closed.
func (db *DB) EndpointHealthOpenCount(ctx context.Context) (int64, error) {
	n, err := db.q.EndpointHealthCountOpen(ctx)
	if err != nil {
		return 0, fmt.Errorf("count open circuits: %w", unavailable(err))
	}
	return n, nil
}
