package db

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Endpoint statuses.
const (
	EndpointEnabled  = "enabled"
	EndpointDisabled = "disabled"
	EndpointDeleted  = "deleted"
)

// Endpoint orderings: "key" delivers one ordering key's callbacks to the
// endpoint one after another (docs/guarantees.md); "none" lets them go at once.
const (
	OrderingKey  = "key"
	OrderingNone = "none"
)

// Endpoint types: a push endpoint is sent each delivery at its URL; a poll
// endpoint has none, and its merchant fetches its deliveries (DeliveryPull)
// and acknowledges them (DeliveryPullAck). Fixed at creation.
const (
	EndpointPush = "push"
	EndpointPoll = "poll"
)

// EndpointBatch is a push endpoint's batched-push setting: MaxEvents > 0
// sends its deliveries as JSON arrays of up to MaxEvents events, one
// request each; MaxWait bounds how long a claimed delivery waits for more
// to join its batch. The zero value sends one delivery per request.
type EndpointBatch struct {
	MaxEvents int
	MaxWait   time.Duration
}

// SecretOverlap is how long a rotated-out endpoint secret keeps signing.
const SecretOverlap = 24 * time.Hour

// Endpoint is a merchant URL with its filters and delivery settings.
type Endpoint struct {
	ID         int64
	MerchantID int64
	// Type is EndpointPush or EndpointPoll (URL is "" for poll).
	Type            string
	URL             string
	Description     string
	CarrierIDs      []int64  // empty = every carrier
	EventTypes      []string // empty = every event type
	Status          string   // enabled | disabled | deleted
	DisabledReason  string
	MaxInFlight     int
	RateLimitPerSec int    // 0 = unlimited
	PayloadMode     string // inline | reference
	RetrySchedule   []time.Duration
	Timeout         time.Duration
	Ordering        string // key | none
	// OmitTraceparent reports whether deliveries go without a traceparent
	// header even when tracing is on (the API's send_traceparent false).
	OmitTraceparent bool
	// Batch is the batched-push setting (zero: one delivery per request).
	Batch EndpointBatch
	// Format is FormatRaw (the carrier's body) or FormatCanonical (the
	// canonical event its carrier's adapter makes).
	Format    string
	CreatedAt time.Time
	UpdatedAt time.Time

	// Headers are custom request headers (name → value), nil when none;
	// stored sealed.
	Headers map[string]string
	// Auth is the credentials requests carry, nil when none; stored sealed.
	Auth *EndpointAuth
	// Filter is the content filter callbacks must pass ("" = every
	// callback), in the language of package filter.
	Filter string
	// Signature is the signature scheme: hookrelay.SignatureHMAC or
	// hookrelay.SignatureEd25519.
	Signature string
	// PublicKey is the "whpk_" public key of the newest ed25519 key, ""
	// for hmac.
	PublicKey string
	// Unreadable is what of its sealed values this process cannot open
	// (nil when everything opens): Headers then keeps those headers' names
	// with empty values, Auth is nil when the credentials cannot be opened.
	Unreadable *Unreadable
}

// EndpointFields are the settable fields of an endpoint.
type EndpointFields struct {
	// Type is EndpointPush (default) or EndpointPoll; only EndpointCreate
	// reads it (an endpoint's type does not change).
	Type            string
	URL             string
	Description     string
	CarrierIDs      []int64
	EventTypes      []string
	MaxInFlight     int             // default 10
	RateLimitPerSec int             // default 0
	PayloadMode     string          // default inline
	RetrySchedule   []time.Duration // empty = the default schedule
	Timeout         time.Duration   // default 15 s
	Ordering        string          // default key
	OmitTraceparent bool            // default false: send it
	Batch           EndpointBatch   // default zero: no batching
	Format          string          // default FormatRaw
	Headers         map[string]string
	Auth            *EndpointAuth
	Filter          string
	Signature       string // default hmac; a change needs a new secret (EndpointUpdate)
	// KeepHeaders and KeepAuth leave the stored headers or credentials as
	// they are (EndpointUpdate), Headers and Auth aside: set by
	// EndpointFieldsOf for an endpoint whose values cannot be opened, so
	// that an update of its other fields does not lose them; an update that
	// replaces them clears the flag.
	KeepHeaders bool
	KeepAuth    bool
}

func (f EndpointFields) withDefaults() EndpointFields {
	if f.Type == "" {
		f.Type = EndpointPush
	}
	if f.MaxInFlight == 0 {
		f.MaxInFlight = 10
	}
	if f.PayloadMode == "" {
		f.PayloadMode = "inline"
	}
	if f.Timeout == 0 {
		f.Timeout = 15 * time.Second
	}
	if f.Format == "" {
		f.Format = FormatRaw
	}
	if f.Ordering == "" {
		f.Ordering = OrderingKey
	}
	if f.Signature == "" {
		f.Signature = hookrelay.SignatureHMAC
	}
	if f.CarrierIDs == nil {
		f.CarrierIDs = []int64{}
	}
	if f.EventTypes == nil {
		f.EventTypes = []string{}
	}
	return f
}

func msList(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Milliseconds()
	}
	return out
}

// endpointFrom turns a row into an Endpoint, opening its sealed values:
// those that cannot be opened are described in Unreadable (the signing
// secrets are not in the row: markSecrets).
func (db *DB) endpointFrom(r dbsqlc.Endpoint) (Endpoint, error) {
	sched := make([]time.Duration, len(r.RetryScheduleMs))
	for i, v := range r.RetryScheduleMs {
		sched[i] = time.Duration(v) * time.Millisecond
	}
	headers, auth, unreadable, err := db.openEndpointSealed(r.Headers, r.Auth)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %d: %w", r.ID, err)
	}
	return Endpoint{
		ID: r.ID, MerchantID: r.MerchantID, Type: r.Type, URL: r.URL, Description: r.Description,
		CarrierIDs: r.CarrierIDs, EventTypes: r.EventTypes, Status: r.Status,
		DisabledReason: r.DisabledReason, MaxInFlight: int(r.MaxInFlight),
		RateLimitPerSec: int(r.RateLimitPerSec), PayloadMode: r.PayloadMode,
		RetrySchedule: sched, Timeout: time.Duration(r.TimeoutMs) * time.Millisecond,
		Ordering: r.Ordering, OmitTraceparent: !r.SendTraceparent, Headers: headers, Auth: auth, Filter: r.Filter,
		Signature: r.Signature, PublicKey: r.PublicKey,
		Batch:     EndpointBatch{MaxEvents: int(r.BatchMaxEvents), MaxWait: time.Duration(r.BatchMaxWaitMs) * time.Millisecond},
		Format:    r.Format,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Unreadable: unreadable,
	}, nil
}

// sealedFields are the stored forms of an endpoint's sealed fields.
type sealedFields struct {
	headers []byte
	auth    string
}

func (db *DB) sealFields(f EndpointFields) (sealedFields, error) {
	var sf sealedFields
	var err error
	if !f.KeepHeaders {
		if sf.headers, err = db.sealHeaders(f.Headers); err != nil {
			return sealedFields{}, err
		}
	}
	if !f.KeepAuth {
		if sf.auth, err = db.sealAuth(f.Auth); err != nil {
			return sealedFields{}, err
		}
	}
	return sf, nil
}

// EndpointCreate inserts an enabled endpoint of merchantID together with its
// first signing secret (a "whsec_" secret for hmac, a "whsk_" private key
// for ed25519).
func (db *DB) EndpointCreate(ctx context.Context, merchantID int64, f EndpointFields, secret string) (Endpoint, error) {
	f = f.withDefaults()
	sf, err := db.sealFields(f)
	if err != nil {
		return Endpoint{}, fmt.Errorf("create endpoint: %w", err)
	}
	sealedSecret, err := db.seal(purposeSecret, secret)
	if err != nil {
		return Endpoint{}, fmt.Errorf("create endpoint: %w", err)
	}
	var ep Endpoint
	err = db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		r, err := q.EndpointInsert(ctx, dbsqlc.EndpointInsertParams{
			MerchantID: merchantID, URL: f.URL, Description: f.Description,
			CarrierIDs: f.CarrierIDs, EventTypes: f.EventTypes, MaxInFlight: int32(f.MaxInFlight),
			RateLimitPerSec: int32(f.RateLimitPerSec), PayloadMode: f.PayloadMode,
			RetryScheduleMs: msList(f.RetrySchedule), TimeoutMs: int32(f.Timeout.Milliseconds()),
			Ordering: f.Ordering, SendTraceparent: !f.OmitTraceparent,
			Headers: sf.headers, Auth: sf.auth, Filter: f.Filter,
			Signature: f.Signature, PublicKey: hookrelay.PublicKeyOf(secret), Type: f.Type,
			BatchMaxEvents: int32(f.Batch.MaxEvents), BatchMaxWaitMs: int32(f.Batch.MaxWait.Milliseconds()), Format: f.Format,
		})
		if err != nil {
			return unavailable(err)
		}
		if _, err := q.EndpointSecretInsert(ctx, dbsqlc.EndpointSecretInsertParams{EndpointID: r.ID, Secret: sealedSecret}); err != nil {
			return unavailable(err)
		}
		ep, err = db.endpointFrom(r)
		return err
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("create endpoint: %w", err)
	}
	return ep, nil
}

// EndpointGet returns the endpoint with id unless deleted, or hookrelay.ENOTFOUND.
func (db *DB) EndpointGet(ctx context.Context, id int64) (Endpoint, error) {
	r, err := db.q.EndpointGet(ctx, id)
	if err != nil {
		return Endpoint{}, notFound(unavailableUnlessNoRows(err), "endpoint")
	}
	ep, err := db.endpointFrom(r)
	if err != nil {
		return Endpoint{}, err
	}
	eps := []Endpoint{ep}
	err = db.markSecrets(ctx, eps)
	return eps[0], err
}

// EndpointList returns up to limit endpoints (not deleted) of merchantID (0 =
// every merchant) with ids above afterID, by id.
func (db *DB) EndpointList(ctx context.Context, merchantID, afterID int64, limit int) ([]Endpoint, error) {
	rows, err := db.q.EndpointList(ctx, dbsqlc.EndpointListParams{MerchantID: merchantID, AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", unavailable(err))
	}
	out := make([]Endpoint, len(rows))
	for i, r := range rows {
		if out[i], err = db.endpointFrom(r); err != nil {
			return nil, err
		}
	}
	if err := db.markSecrets(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// EndpointRoute is the part of an endpoint the ingest fan-out needs.
type EndpointRoute struct {
	ID         int64
	MerchantID int64
	CarrierIDs []int64  // empty = every carrier
	EventTypes []string // empty = every event type
	Status     string
	// Unordered reports whether the endpoint's ordering is "none": its
	// deliveries are stored unordered.
	Unordered bool
	Filter    string // "" = every callback
	// Canonical reports whether it takes canonical events (FormatCanonical).
	Canonical bool
}

// Endpoint formats: what an endpoint receives.
const (
	// FormatRaw is the carrier's callback body as it came.
	FormatRaw = "raw"
	// FormatCanonical is the canonical event the carrier's adapter made.
	FormatCanonical = "canonical"
)

// EndpointRoutes returns every endpoint that is not deleted.
func (db *DB) EndpointRoutes(ctx context.Context) ([]EndpointRoute, error) {
	rows, err := db.q.EndpointListLive(ctx)
	if err != nil {
		return nil, fmt.Errorf("load endpoint routes: %w", unavailable(err))
	}
	out := make([]EndpointRoute, len(rows))
	for i, r := range rows {
		out[i] = EndpointRoute{ID: r.ID, MerchantID: r.MerchantID, CarrierIDs: r.CarrierIDs, EventTypes: r.EventTypes, Status: r.Status,
			Unordered: r.Ordering == OrderingNone, Filter: r.Filter, Canonical: r.Format == FormatCanonical}
	}
	return out, nil
}

// EndpointUpdate replaces the settable fields of endpoint id (callers merge a
// partial update into the current fields first). A newSecret other than ""
// (the caller's, for a change of signature scheme) is rotated in as by
// EndpointSecretRotate, in the same transaction.
func (db *DB) EndpointUpdate(ctx context.Context, id int64, f EndpointFields, newSecret string) (Endpoint, error) {
	f = f.withDefaults()
	sf, err := db.sealFields(f)
	if err != nil {
		return Endpoint{}, fmt.Errorf("update endpoint: %w", err)
	}
	p := dbsqlc.EndpointUpdateParams{
		ID: id, URL: f.URL, Description: f.Description, CarrierIDs: f.CarrierIDs, EventTypes: f.EventTypes,
		MaxInFlight: int32(f.MaxInFlight), RateLimitPerSec: int32(f.RateLimitPerSec), PayloadMode: f.PayloadMode,
		RetryScheduleMs: msList(f.RetrySchedule), TimeoutMs: int32(f.Timeout.Milliseconds()),
		Ordering: f.Ordering, SendTraceparent: !f.OmitTraceparent, Filter: f.Filter,
		Signature:      f.Signature,
		BatchMaxEvents: int32(f.Batch.MaxEvents), BatchMaxWaitMs: int32(f.Batch.MaxWait.Milliseconds()), Format: f.Format,
	}
	if !f.KeepHeaders {
		p.Headers = sf.headers
	}
	if !f.KeepAuth {
		p.Auth = &sf.auth
	}
	var sealed string
	if newSecret != "" {
		pk := hookrelay.PublicKeyOf(newSecret)
		p.PublicKey = &pk
		if sealed, err = db.seal(purposeSecret, newSecret); err != nil {
			return Endpoint{}, fmt.Errorf("update endpoint: %w", err)
		}
	}
	var ep Endpoint
	err = db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		r, err := q.EndpointUpdate(ctx, p)
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "endpoint")
		}
		if sealed != "" {
			if err := rotateIn(ctx, q, id, sealed); err != nil {
				return err
			}
		}
		ep, err = db.endpointFrom(r)
		return err
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("update endpoint: %w", err)
	}
	eps := []Endpoint{ep}
	err = db.markSecrets(ctx, eps)
	return eps[0], err
}

// EndpointFieldsOf returns the settable fields of ep.
func EndpointFieldsOf(ep Endpoint) EndpointFields {
	return EndpointFields{
		Type: ep.Type, URL: ep.URL, Description: ep.Description, CarrierIDs: ep.CarrierIDs, EventTypes: ep.EventTypes,
		MaxInFlight: ep.MaxInFlight, RateLimitPerSec: ep.RateLimitPerSec, PayloadMode: ep.PayloadMode,
		RetrySchedule: ep.RetrySchedule, Timeout: ep.Timeout, Ordering: ep.Ordering, OmitTraceparent: ep.OmitTraceparent,
		Headers: ep.Headers, Auth: ep.Auth, Filter: ep.Filter, Signature: ep.Signature, Batch: ep.Batch, Format: ep.Format,
		KeepHeaders: ep.Unreadable != nil && len(ep.Unreadable.Headers) > 0,
		KeepAuth:    ep.Unreadable != nil && ep.Unreadable.Auth,
	}
}

// EndpointEnable enables endpoint id, resets its health (failures, circuit)
// and makes its held deliveries visible at once. An endpoint that was not
// enabled reports endpoint.enabled in the same transaction.
func (db *DB) EndpointEnable(ctx context.Context, id int64) (Endpoint, error) {
	var ep Endpoint
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		was, err := q.EndpointStatusLock(ctx, id)
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "endpoint")
		}
		r, err := q.EndpointSetStatus(ctx, dbsqlc.EndpointSetStatusParams{ID: id, Status: EndpointEnabled})
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "endpoint")
		}
		if was != EndpointEnabled {
			if err := opsEventAdd(ctx, q, hookrelay.OpsEventEndpointEnabled, id, endpointEventData(r)); err != nil {
				return err
			}
		}
		if err := q.EndpointHealthReset(ctx, id); err != nil {
			return unavailable(err)
		}
		if _, err := q.DeliveryReleaseByEndpoint(ctx, id); err != nil {
			return unavailable(err)
		}
		ep, err = db.endpointFrom(r)
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	eps := []Endpoint{ep}
	err = db.markSecrets(ctx, eps)
	return eps[0], err
}

// EndpointDisable disables endpoint id; the dispatcher holds its deliveries.
// An enabled endpoint disabled reports endpoint.disabled (trigger "manual")
// in the same transaction.
func (db *DB) EndpointDisable(ctx context.Context, id int64, reason string) (Endpoint, error) {
	var ep Endpoint
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		was, err := q.EndpointStatusLock(ctx, id)
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "endpoint")
		}
		r, err := q.EndpointSetStatus(ctx, dbsqlc.EndpointSetStatusParams{ID: id, Status: EndpointDisabled, DisabledReason: reason})
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "endpoint")
		}
		if was == EndpointEnabled {
			data := endpointEventData(r)
			data["reason"], data["trigger"] = reason, "manual"
			if err := opsEventAdd(ctx, q, hookrelay.OpsEventEndpointDisabled, id, data); err != nil {
				return err
			}
		}
		ep, err = db.endpointFrom(r)
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	eps := []Endpoint{ep}
	err = db.markSecrets(ctx, eps)
	return eps[0], err
}

// endpointEventData is the data every endpoint.* event carries.
func endpointEventData(r dbsqlc.Endpoint) map[string]any {
	return map[string]any{"endpoint_id": strconv.FormatInt(r.ID, 10), "merchant_id": strconv.FormatInt(r.MerchantID, 10)}
}

// EndpointDelete marks endpoint id deleted and deletes its pending
// deliveries; it returns how many deliveries it deleted.
//
// The delete waits for the row locks of deliveries being acknowledged, and an
// acknowledgement holding some of them may wait in turn for a row this
// delete already holds (a chain successor it promotes): PostgreSQL then
// aborts one of the two as a deadlock. The delete is run again when it is the one aborted (its whole
// transaction was rolled back), up to deleteAttempts times, each after a
// pause: run again at once, it could take back a row the winner was about to
// lock before the winner woke, and deadlock with it again.
func (db *DB) EndpointDelete(ctx context.Context, id int64) (int64, error) {
	var n int64
	var err error
	for attempt := range deleteAttempts {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt) * deleteRetryPause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return n, err
			}
		}
		err = db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
			if _, err := q.EndpointSetStatus(ctx, dbsqlc.EndpointSetStatusParams{ID: id, Status: EndpointDeleted}); err != nil {
				return notFound(unavailableUnlessNoRows(err), "endpoint")
			}
			var err error
			n, err = q.DeliveryDeleteByEndpoint(ctx, id)
			return unavailable(err)
		})
		if !transient(err) {
			break
		}
	}
	return n, err
}

// deleteAttempts bounds the runs of a transaction aborted by a deadlock;
// the n-th run again waits n × deleteRetryPause first.
const (
	deleteAttempts   = 3
	deleteRetryPause = 100 * time.Millisecond
)

// EndpointSecret is a signing secret of an endpoint.
type EndpointSecret struct {
	ID int64
	// Secret is a "whsec_" HMAC secret or a "whsk_" ed25519 private key;
	// a private key is never shown (show PublicKey).
	Secret string
	// PublicKey is the "whpk_" public key of a private key, "" for an HMAC
	// secret.
	PublicKey string
	CreatedAt time.Time
	ExpiresAt *time.Time // nil: no expiry
	// Unreadable is why the secret cannot be opened with the keys this
	// process holds ("" when it opens; Secret is "" then).
	Unreadable string
}

// EndpointSecretRotate adds secret (of the endpoint's scheme) as the newest
// secret of endpoint id; every older secret expires SecretOverlap from now
// (or sooner if set so).
func (db *DB) EndpointSecretRotate(ctx context.Context, id int64, secret string) error {
	sealed, err := db.seal(purposeSecret, secret)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		if _, err := q.EndpointGet(ctx, id); err != nil {
			return notFound(unavailableUnlessNoRows(err), "endpoint")
		}
		if err := q.EndpointSetPublicKey(ctx, dbsqlc.EndpointSetPublicKeyParams{ID: id, PublicKey: hookrelay.PublicKeyOf(secret)}); err != nil {
			return unavailable(err)
		}
		return rotateIn(ctx, q, id, sealed)
	})
}

// rotateIn expires the secrets of endpoint id after the overlap and adds
// sealed as the newest.
func rotateIn(ctx context.Context, q *dbsqlc.Queries, id int64, sealed string) error {
	if err := q.EndpointSecretExpire(ctx, dbsqlc.EndpointSecretExpireParams{EndpointID: id, Overlap: SecretOverlap}); err != nil {
		return unavailable(err)
	}
	_, err := q.EndpointSecretInsert(ctx, dbsqlc.EndpointSecretInsertParams{EndpointID: id, Secret: sealed})
	return unavailable(err)
}

// EndpointSecretsActive returns the unexpired secrets of endpoint id, newest
// first; one that cannot be opened has Unreadable set instead of Secret.
func (db *DB) EndpointSecretsActive(ctx context.Context, id int64) ([]EndpointSecret, error) {
	rows, err := db.q.EndpointSecretListActive(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("endpoint secrets: %w", unavailable(err))
	}
	out := make([]EndpointSecret, len(rows))
	for i, r := range rows {
		out[i] = EndpointSecret{ID: r.ID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
		plain, err := db.openValue(purposeSecret, r.Secret)
		if err != nil {
			out[i].Unreadable = err.Error()
			continue
		}
		out[i].Secret, out[i].PublicKey = plain, hookrelay.PublicKeyOf(plain)
	}
	return out, nil
}
