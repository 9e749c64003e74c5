package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
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
	// Batch is the batched-push setting (zero: one delivery per request).
	Batch EndpointBatch
	// Format is FormatRaw or FormatCanonical.
	Format string
	// Unreadable is why its newest signing secret, a header value or its
	// credentials cannot be opened ("" when all of them open): the endpoint
	// cannot be delivered to as configured, and its deliveries are parked.
	// Secrets, Headers and Auth then hold only what opened.
	Unreadable string
	// UnreadableMarked reports whether its health row records it as
	// unreadable (EndpointUnreadableMark), whatever this process found.
	UnreadableMarked bool
}

// EndpointConfigLoad returns the dispatch settings of the given endpoints
// (missing ids are left out). Each endpoint's sealed values are opened on
// their own: one that cannot be opened makes that endpoint Unreadable and
// never fails the others.
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
		headers, auth, u, err := db.openEndpointSealed(r.Headers, r.Auth)
		if err != nil {
			// Malformed, not merely unopenable: unreadable all the same.
			headers, auth, u = nil, nil, (*Unreadable)(nil).note("endpoint", err)
		}
		secrets, u := db.openSecrets(r.Secrets, u)
		out[i] = EndpointConfig{
			ID: r.ID, URL: r.URL, Status: r.Status, MaxInFlight: int(r.MaxInFlight),
			RateLimitPerSec: int(r.RateLimitPerSec), PayloadMode: r.PayloadMode,
			RetrySchedule: sched, Timeout: time.Duration(r.TimeoutMs) * time.Millisecond,
			Secrets: secrets, Headers: headers, Auth: auth, ConsecutiveFailures: int(r.ConsecutiveFailures), CircuitState: r.CircuitState,
			OmitTraceparent: !r.SendTraceparent, UnreadableMarked: r.UnreadableMarked,
			Batch:  EndpointBatch{MaxEvents: int(r.BatchMaxEvents), MaxWait: time.Duration(r.BatchMaxWaitMs) * time.Millisecond},
			Format: r.Format,
		}
		if u != nil {
			out[i].Unreadable = u.String()
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

// EndpointStatus is an endpoint with its delivery health.
type EndpointStatus struct {
	ID                  int64
	MerchantID          int64
	URL                 string
	Description         string
	Status              string // enabled | disabled
	DisabledReason      string
	PayloadMode         string
	Ordering            string // key | none
	Signature           string // hmac | ed25519
	Type                string // push | poll
	CreatedAt           time.Time
	ConsecutiveFailures int
	CircuitState        string // closed | open | half_open
	CircuitOpenUntil    *time.Time
	FailingSince        *time.Time
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	LastError           string
	// UnreadableSince is when a dispatcher found that its signing secret,
	// a header value or its credentials cannot be opened (nil: none did),
	// and UnreadableReason says which and why; its deliveries are parked.
	UnreadableSince  *time.Time
	UnreadableReason string
}

// EndpointStatusList returns up to limit endpoints of merchantID (0 = all)
// with ids above afterID, with their health, by id.
func (db *DB) EndpointStatusList(ctx context.Context, merchantID, afterID int64, limit int) ([]EndpointStatus, error) {
	rows, err := db.q.EndpointListWithHealth(ctx, dbsqlc.EndpointListWithHealthParams{MerchantID: merchantID, AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list endpoints with health: %w", unavailable(err))
	}
	out := make([]EndpointStatus, len(rows))
	for i, r := range rows {
		out[i] = EndpointStatus{
			ID: r.ID, MerchantID: r.MerchantID, URL: r.URL, Description: r.Description, Status: r.Status,
			DisabledReason: r.DisabledReason, PayloadMode: r.PayloadMode, Ordering: r.Ordering,
			Signature: r.Signature, Type: r.Type, CreatedAt: r.CreatedAt, ConsecutiveFailures: int(r.ConsecutiveFailures), CircuitState: r.CircuitState,
			CircuitOpenUntil: r.CircuitOpenUntil, FailingSince: r.FailingSince,
			LastSuccessAt: r.LastSuccessAt, LastFailureAt: r.LastFailureAt, LastError: r.LastError,
			UnreadableSince: r.UnreadableSince, UnreadableReason: r.UnreadableReason,
		}
	}
	return out, nil
}
