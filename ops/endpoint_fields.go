package ops

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/filter"
)

// Bounds of the endpoint fields (the API's documented limits).
const (
	MaxDescription   = 1000
	MaxEventTypes    = 100
	MaxEventType     = 200
	MaxInFlightLimit = 1000
	MaxRateLimit     = 100000
	MaxRetryDelays   = 50
	MinRetryDelay    = time.Second
	MaxRetryDelay    = 7 * 24 * time.Hour
	MinTimeout       = 100 * time.Millisecond
	MaxTimeout       = 120 * time.Second
	PayloadInline    = "inline"
	PayloadReference = "reference"
	fieldURL         = "url"
	fieldCarriers    = "carriers"
	fieldEventTypes  = "event_types"
	fieldRetrySched  = "retry_schedule"
	fieldTimeout     = "timeout"
	fieldPayloadMode = "payload_mode"
	fieldMaxInFlight = "max_in_flight"
	fieldRateLimit   = "rate_limit_per_sec"
	fieldDescription = "description"
	fieldMerchantID  = "merchant_id"
	fieldHeaders     = "headers"
	fieldAuth        = "auth"
	fieldFilter      = "filter"
	fieldOrdering    = "ordering"
	fieldSignature   = "signature"
	fieldBatch       = "batch"
	fieldFormat      = "format"
	// MaxBatchEvents bounds an endpoint's batch.max_events.
	MaxBatchEvents = 100
	// MaxBatchWait bounds an endpoint's batch.max_wait.
	MaxBatchWait = 10 * time.Second
	// DefaultBatchWait is batch.max_wait when a batch does not give one.
	DefaultBatchWait = time.Second
)

// EndpointInput is an endpoint's settable fields as a caller gives them:
// the API's JSON body (POST and PATCH /v1/endpoints) or the portal's form.
// A nil field is absent: an update leaves it unchanged, a creation takes its
// default. Every rule about these fields lives in ApplyEndpoint, so the API
// and the portal cannot disagree; a new field is one member here, one check
// there (or in endpoint_headers.go, endpoint_auth.go) and one entry in the
// portal's form definition (package web).
type EndpointInput struct {
	// Type is db.EndpointPush (default) or db.EndpointPoll; taken at
	// creation only (an update may repeat the endpoint's own).
	Type        *string
	URL         *string
	Description *string
	// Carriers are carrier names or decimal ids; empty means every carrier.
	Carriers *[]string
	// EventTypes are the event types delivered; empty means every one.
	EventTypes      *[]string
	MaxInFlight     *int
	RateLimitPerSec *int
	PayloadMode     *string
	// RetrySchedule are Go durations ("30s", "5m"); empty means the default.
	RetrySchedule *[]string
	Timeout       *string
	// Ordering is db.OrderingKey or db.OrderingNone.
	Ordering *string
	// SendTraceparent says whether deliveries carry a traceparent header
	// when tracing is on (default true).
	SendTraceparent *bool

	// Headers merges into the custom headers: a name with a value sets it,
	// a name with nil removes it; nil leaves them all.
	Headers map[string]*string
	// Auth replaces the credentials; RemoveAuth removes them (the API's
	// "auth": null). Neither leaves them.
	Auth       *AuthInput
	RemoveAuth bool
	// Filter is the content filter; "" removes it.
	Filter *string
	// Signature is the signature scheme, hookrelay.SignatureHMAC or
	// hookrelay.SignatureEd25519; a change rotates in a new key.
	Signature *string
	// Batch sets batched push (a push endpoint's deliveries sent as JSON
	// arrays); RemoveBatch turns it off (the API's "batch": null). Neither
	// leaves it.
	Batch       *BatchInput
	RemoveBatch bool
	// Format is what the endpoint receives: db.FormatRaw (default, the
	// carrier's body as it came) or db.FormatCanonical (the canonical
	// event of the carrier's adapter; callbacks without one are not sent).
	Format *string
}

// BatchInput is an endpoint's batched-push setting as a caller gives it:
// MaxEvents 1 to MaxBatchEvents (required), MaxWait a Go duration from 0 to
// MaxBatchWait (absent: DefaultBatchWait).
type BatchInput struct {
	MaxEvents *int
	MaxWait   *string
}

// FieldError is a refused field of an EndpointInput: Field is its API name
// (the portal shows the message next to the field of that name). It reads as
// its hookrelay.EINVALID error, whose message names the field.
type FieldError struct {
	Field string
	Err   *hookrelay.Error
}

func (e *FieldError) Error() string { return e.Err.Error() }

// Unwrap returns the hookrelay.EINVALID error.
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: hookrelay.Errorf(hookrelay.EINVALID, format, args...)}
}

// FieldOf returns the field a validation error names, "" for any other error.
func FieldOf(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// ApplyEndpoint merges in into f, validating every field given; the URL
// by the service's URL policy (Config). The first refused field is a
// *FieldError.
func (s *Service) ApplyEndpoint(ctx context.Context, in EndpointInput, f *db.EndpointFields) error {
	if in.URL != nil {
		if err := hookrelay.CheckText(fieldURL, *in.URL, 0); err != nil {
			return asField(fieldURL, err)
		}
		u, err := s.checkURL(ctx, *in.URL)
		if err != nil {
			return asField(fieldURL, err)
		}
		f.URL = u
	}
	if in.Description != nil {
		if len(*in.Description) > MaxDescription {
			return fieldErrorf(fieldDescription, "description longer than %d characters", MaxDescription)
		}
		if err := hookrelay.CheckText(fieldDescription, *in.Description, 0); err != nil {
			return asField(fieldDescription, err)
		}
		f.Description = *in.Description
	}
	if in.Carriers != nil {
		ids, err := s.resolveCarriers(ctx, *in.Carriers)
		if err != nil {
			return err
		}
		f.CarrierIDs = ids
	}
	if in.EventTypes != nil {
		events := *in.EventTypes
		if len(events) > MaxEventTypes {
			return fieldErrorf(fieldEventTypes, "at most %d event_types", MaxEventTypes)
		}
		for _, e := range events {
			if e == "" || len(e) > MaxEventType {
				return fieldErrorf(fieldEventTypes, "event_types entries must be 1 to %d characters", MaxEventType)
			}
			if err := hookrelay.CheckText("event_types entry", e, 0); err != nil {
				return asField(fieldEventTypes, err)
			}
		}
		f.EventTypes = append([]string{}, events...)
	}
	if in.MaxInFlight != nil {
		if *in.MaxInFlight < 1 || *in.MaxInFlight > MaxInFlightLimit {
			return fieldErrorf(fieldMaxInFlight, "max_in_flight must be between 1 and %d", MaxInFlightLimit)
		}
		f.MaxInFlight = *in.MaxInFlight
	}
	if in.RateLimitPerSec != nil {
		if *in.RateLimitPerSec < 0 || *in.RateLimitPerSec > MaxRateLimit {
			return fieldErrorf(fieldRateLimit, "rate_limit_per_sec must be between 0 (unlimited) and %d", MaxRateLimit)
		}
		f.RateLimitPerSec = *in.RateLimitPerSec
	}
	if in.PayloadMode != nil {
		if *in.PayloadMode != PayloadInline && *in.PayloadMode != PayloadReference {
			return fieldErrorf(fieldPayloadMode, `payload_mode must be "inline" or "reference"`)
		}
		f.PayloadMode = *in.PayloadMode
	}
	if in.RetrySchedule != nil {
		raw := *in.RetrySchedule
		if len(raw) > MaxRetryDelays {
			return fieldErrorf(fieldRetrySched, "retry_schedule has at most %d delays", MaxRetryDelays)
		}
		f.RetrySchedule = make([]time.Duration, len(raw))
		for i, r := range raw {
			d, err := time.ParseDuration(r)
			if err != nil || d < MinRetryDelay || d > MaxRetryDelay {
				return fieldErrorf(fieldRetrySched, "retry_schedule[%d]: want a duration between 1s and 168h, such as \"30s\" or \"5m\"", i)
			}
			f.RetrySchedule[i] = d
		}
	}
	if in.Timeout != nil {
		d, err := time.ParseDuration(*in.Timeout)
		if err != nil || d < MinTimeout || d > MaxTimeout {
			return fieldErrorf(fieldTimeout, "timeout must be a duration between 100ms and 120s, such as \"15s\"")
		}
		f.Timeout = d
	}
	if in.Ordering != nil {
		if *in.Ordering != db.OrderingKey && *in.Ordering != db.OrderingNone {
			return fieldErrorf(fieldOrdering, `ordering must be "key" (one ordering key's callbacks in order) or "none"`)
		}
		f.Ordering = *in.Ordering
	}
	if in.SendTraceparent != nil {
		f.OmitTraceparent = !*in.SendTraceparent
	}
	if in.Format != nil {
		if *in.Format != db.FormatRaw && *in.Format != db.FormatCanonical {
			return fieldErrorf(fieldFormat, `format must be "raw" (the carrier's callback as it came) or "canonical" (the event of the carrier's adapter)`)
		}
		f.Format = *in.Format
	}
	if err := applyBatch(in, f); err != nil {
		return err
	}
	return applyReceiver(in, f)
}

// asField files an EINVALID error under field; other errors pass unchanged.
func asField(field string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return err
	}
	var he *hookrelay.Error
	if errors.As(err, &he) && he.Code == hookrelay.EINVALID {
		return &FieldError{Field: field, Err: he}
	}
	return err
}

// resolveCarriers turns carrier names or decimal ids into ids; an unknown
// one is refused.
func (s *Service) resolveCarriers(ctx context.Context, refs []string) ([]int64, error) {
	all, err := s.db.CarrierAll(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]int64, len(all))
	byID := make(map[int64]bool, len(all))
	for _, c := range all {
		byName[c.Name] = c.ID
		byID[c.ID] = true
	}
	ids := make([]int64, 0, len(refs))
	for _, r := range refs {
		id, ok := byName[r]
		if !ok {
			n, err := strconv.ParseInt(r, 10, 64)
			if err != nil {
				return nil, fieldErrorf(fieldCarriers, "carriers: no carrier named %q", r)
			}
			id = n
		}
		if !byID[id] {
			return nil, fieldErrorf(fieldCarriers, "carriers: no carrier with id %d", id)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// applyReceiver merges the receiver-facing fields of in (headers, auth,
// signature scheme, filter) into f, validating them.
func applyReceiver(in EndpointInput, f *db.EndpointFields) error {
	if in.Headers != nil {
		if err := applyHeaders(in.Headers, f); err != nil {
			return err
		}
	}
	if in.RemoveAuth {
		f.Auth = nil
	} else if in.Auth != nil {
		a, err := in.Auth.toAuth()
		if err != nil {
			return asField(fieldAuth, err)
		}
		f.Auth = a
	}
	if in.Signature != nil {
		switch *in.Signature {
		case hookrelay.SignatureHMAC, hookrelay.SignatureEd25519:
			f.Signature = *in.Signature
		default:
			return fieldErrorf(fieldSignature, `signature must be "hmac" (v1, a shared secret) or "ed25519" (v1a, a public key)`)
		}
	}
	if in.Filter != nil {
		if err := CheckFilter(*in.Filter); err != nil {
			return asField(fieldFilter, err)
		}
		f.Filter = *in.Filter
	}
	return nil
}

// CheckFilter compiles a content filter so a bad one is refused at once,
// naming where it goes wrong; "" (no filter) passes.
func CheckFilter(src string) error {
	if src == "" {
		return nil
	}
	if err := hookrelay.CheckText("filter", src, filter.MaxLength); err != nil {
		return asField(fieldFilter, err)
	}
	if _, err := filter.Parse(src); err != nil {
		return fieldErrorf(fieldFilter, "filter: %v", err)
	}
	return nil
}

// applyBatch merges the batched-push setting of in into f. A poll endpoint
// takes none: its deliveries are fetched, already many at a time.
func applyBatch(in EndpointInput, f *db.EndpointFields) error {
	if in.RemoveBatch {
		f.Batch = db.EndpointBatch{}
		return nil
	}
	if in.Batch == nil {
		return nil
	}
	if f.Type == db.EndpointPoll {
		return fieldErrorf(fieldBatch, "a poll endpoint takes no batch: its deliveries are fetched, many at a time")
	}
	b := db.EndpointBatch{MaxWait: DefaultBatchWait}
	if in.Batch.MaxEvents == nil || *in.Batch.MaxEvents < 1 || *in.Batch.MaxEvents > MaxBatchEvents {
		return fieldErrorf(fieldBatch, "batch.max_events must be between 1 and %d", MaxBatchEvents)
	}
	b.MaxEvents = *in.Batch.MaxEvents
	if in.Batch.MaxWait != nil {
		d, err := time.ParseDuration(*in.Batch.MaxWait)
		if err != nil || d < 0 || d > MaxBatchWait {
			return fieldErrorf(fieldBatch, "batch.max_wait must be a duration between 0s and %s, such as \"2s\"", MaxBatchWait)
		}
		b.MaxWait = d
	}
	f.Batch = b
	return nil
}
