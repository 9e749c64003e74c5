package ops

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
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
)

// EndpointInput is an endpoint's settable fields as a caller gives them:
// the API's JSON body (POST and PATCH /v1/endpoints) or the portal's form.
// A nil field is absent: an update leaves it unchanged, a creation takes its
// default. Every rule about these fields lives in ApplyEndpoint, so the API
// and the portal cannot disagree; a new field is one member here, one check
// there (or in endpoint_receivers.go) and one entry in the portal's form
// definition (package web).
type EndpointInput struct {
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

// NewEndpoint is an endpoint saved, with the new HMAC secret it got (shown
// once): on creation, and on an update that switched it to hmac. Secret is
// "" otherwise: an ed25519 key is never shown (Endpoint.PublicKey is).
type NewEndpoint struct {
	Endpoint db.Endpoint
	Secret   string
}

// shownSecret is secret as an answer may show it: an HMAC secret, never a
// private key.
func shownSecret(secret string) string {
	if hookrelay.PublicKeyOf(secret) != "" {
		return ""
	}
	return secret
}

// CreateEndpoint validates in and creates an enabled endpoint of merchant
// merchantID with a fresh signing secret or key pair. A merchant creates
// only its own (another merchant named is EFORBIDDEN); the operator names an
// existing merchant. The URL is required.
func (s *Service) CreateEndpoint(ctx context.Context, a Actor, merchantID int64, in EndpointInput) (NewEndpoint, error) {
	if a.MerchantID != 0 && merchantID != a.MerchantID {
		return NewEndpoint{}, hookrelay.Errorf(hookrelay.EFORBIDDEN, "merchant_id names another merchant")
	}
	if a.MerchantID == 0 {
		if _, err := s.db.MerchantGet(ctx, merchantID); err != nil {
			if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
				return NewEndpoint{}, fieldErrorf(fieldMerchantID, "merchant_id: no such merchant")
			}
			return NewEndpoint{}, err
		}
	}
	if in.URL == nil {
		return NewEndpoint{}, fieldErrorf(fieldURL, "url is required")
	}
	f := db.EndpointFields{Signature: hookrelay.SignatureHMAC}
	if err := s.ApplyEndpoint(ctx, in, &f); err != nil {
		return NewEndpoint{}, err
	}
	secret := hookrelay.NewSigningSecret(f.Signature)
	ep, err := s.db.EndpointCreate(ctx, merchantID, f, secret)
	if err != nil {
		return NewEndpoint{}, fmt.Errorf("create endpoint: %w", err)
	}
	return NewEndpoint{Endpoint: ep, Secret: shownSecret(secret)}, nil
}

// UpdateEndpoint validates in and applies it to endpoint id, if a may act
// on it; absent fields stay as they are. A change of signature scheme
// rotates in a new secret or key pair of the new scheme: the old one keeps
// signing beside it for db.SecretOverlap.
func (s *Service) UpdateEndpoint(ctx context.Context, a Actor, id int64, in EndpointInput) (NewEndpoint, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return NewEndpoint{}, err
	}
	f := db.EndpointFieldsOf(ep)
	if err := s.ApplyEndpoint(ctx, in, &f); err != nil {
		return NewEndpoint{}, err
	}
	var secret string
	if f.Signature != ep.Signature {
		secret = hookrelay.NewSigningSecret(f.Signature)
	}
	up, err := s.db.EndpointUpdate(ctx, ep.ID, f, secret)
	if err != nil {
		return NewEndpoint{}, err
	}
	return NewEndpoint{Endpoint: up, Secret: shownSecret(secret)}, nil
}

// Endpoints returns up to limit endpoints (not deleted) with ids above
// afterID, by id: a merchant's own, whatever merchantID says; for the
// operator those of merchantID (0: every merchant's).
func (s *Service) Endpoints(ctx context.Context, a Actor, merchantID, afterID int64, limit int) ([]db.Endpoint, error) {
	if a.MerchantID != 0 {
		merchantID = a.MerchantID
	}
	return s.db.EndpointList(ctx, merchantID, afterID, limit)
}
