package ingest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/adapter"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/filter"
)

// MaxIdempotencyKey bounds a callback's Idempotency-Key header.
const MaxIdempotencyKey = 255

// MaxRoutingValue bounds the ordering key, event type and merchant
// reference of a callback.
const MaxRoutingValue = 1024

// Routed is what the intake makes of a callback's body and headers: its
// routing values, its canonical event and the endpoints it goes to.
type Routed struct {
	OrderingKey string
	// EventType is the callback's own event type (header or body field);
	// the canonical event's is CanonicalType.
	EventType   string
	MerchantRef string
	// EndpointIDs are the endpoints it fans out to (Snapshot.FanOut and,
	// with an event, Snapshot.FanOutCanonical), ascending.
	EndpointIDs []int64
	// CanonicalEndpointIDs are those of EndpointIDs that take canonical
	// events, ascending.
	CanonicalEndpointIDs []int64
	// Adapter is what the carrier's active adapter made of it (Version 0:
	// the carrier has none). With an event, CanonicalType and
	// CanonicalEvent are its type and envelope (Envelope), what canonical
	// endpoints receive. Parked is the adapter's error when the carrier
	// parks such callbacks ("" otherwise): the callback is stored for
	// the raw endpoints and an operator.
	Adapter        AdapterOutcome
	CanonicalType  string
	CanonicalEvent []byte
	Parked         string
}

// Callback is a callback as Route reads it.
type Callback struct {
	Header http.Header
	Body   []byte
	// ReceivedAt is when it arrived (the adapter's clock). Zero: now.
	ReceivedAt time.Time
}

// Route reads a callback of carrier (its headers and body, already
// authenticated) as the intake does: the carrier's active adapter first,
// when it has one (its event, its schema check), then the routing values
// from the headers (X-Ordering-Key, X-Event-Type, X-Merchant-Id) or else
// from the carrier's body fields — the event's ordering key and merchant,
// when it sets them, take their place — their checks, and the fan-out of
// snap: raw endpoints by the callback's values, canonical ones by the
// event's (none without an event). It is the one implementation of these
// rules, for POST /v1/callbacks and for trying a sample
// (ops.Service.TryCallback). A refusal names its reason
// (hookrelay.ReasonOf): parse, missing_ordering_key, invalid_field, or
// adapter_failed, adapter_limit, schema_invalid (422) when the carrier
// refuses callbacks its adapter fails on.
func Route(ctx context.Context, snap *Snapshot, carrier db.Carrier, cb Callback) (Routed, error) {
	if cb.ReceivedAt.IsZero() {
		cb.ReceivedAt = time.Now()
	}
	var r Routed
	if err := r.adapt(ctx, snap, carrier, cb); err != nil {
		return Routed{}, err
	}
	ev := r.Adapter.Event
	var fields []Field
	var vals []filter.Value
	var err error
	filterPaths := snap.FilterPaths()
	if len(filterPaths) == 0 {
		fields, err = ParseCallback(cb.Body, carrier.OrderingKeyField, carrier.EventTypeField, carrier.MerchantField)
	} else {
		paths := append([]string{carrier.OrderingKeyField, carrier.EventTypeField, carrier.MerchantField}, filterPaths...)
		fields, vals, err = ParseCallbackValues(cb.Body, paths...)
		if err == nil {
			vals = vals[3:]
		}
	}
	// A body that is not one JSON object is taken only for the carrier's
	// adapter (a form post, XML...): it has no routing values of its own
	// and goes to canonical endpoints only (raw endpoints are sent JSON).
	notJSON := err != nil
	if notJSON {
		if r.Adapter.Version == 0 {
			return Routed{}, errParse
		}
		fields, vals = make([]Field, 3), make([]filter.Value, len(filterPaths))
	}
	r.OrderingKey = headerOr(cb.Header, "X-Ordering-Key", fields[0])
	r.EventType = headerOr(cb.Header, "X-Event-Type", fields[1])
	r.MerchantRef = headerOr(cb.Header, "X-Merchant-Id", fields[2])
	if ev != nil && ev.OrderingKey != "" {
		r.OrderingKey = ev.OrderingKey
	}
	if ev != nil && ev.Merchant != "" {
		r.MerchantRef = ev.Merchant
	}
	switch {
	case r.OrderingKey == "" && notJSON && ev == nil:
		// Dropped or parked, and nothing to deliver: stored for support
		// (and unparking) without an ordering key.
	case r.OrderingKey == "" && notJSON:
		return Routed{}, hookrelay.WithReason(hookrelay.Errorf(hookrelay.EINVALID,
			"missing ordering key: the body is not JSON and the adapter's event sets no ordering_key (or send X-Ordering-Key)"),
			hookrelay.ReasonMissingOrderingKey)
	case r.OrderingKey == "":
		return Routed{}, hookrelay.WithReason(hookrelay.Errorf(hookrelay.EINVALID,
			"missing ordering key: send X-Ordering-Key or a string or number at %q", carrier.OrderingKeyField),
			hookrelay.ReasonMissingOrderingKey)
	}
	if err := checkRouting(cb.Header, carrier, r.OrderingKey, r.EventType, r.MerchantRef); err != nil && r.OrderingKey != "" {
		return Routed{}, hookrelay.WithReason(err, hookrelay.ReasonInvalidField)
	}
	if !notJSON {
		r.EndpointIDs = snap.FanOut(carrier.ID, r.EventType, r.MerchantRef, vals)
	}
	if ev == nil {
		return r, nil
	}
	if err := r.fanOutEvent(snap, carrier, cb.ReceivedAt); err != nil {
		return Routed{}, err
	}
	return r, nil
}

// adapt runs the carrier's active adapter (none: nothing to do) and keeps
// what it made in r.Adapter; a failure is the error to refuse the callback
// with, unless the carrier parks such callbacks (r.Parked).
func (r *Routed) adapt(ctx context.Context, snap *Snapshot, carrier db.Carrier, cb Callback) error {
	version, prog, cerr := snap.Adapter(carrier.ID)
	if version == 0 {
		return nil
	}
	if cerr != nil {
		r.Adapter = AdapterOutcome{Version: version, Err: unprocessable(hookrelay.ReasonAdapterFailed,
			fmt.Sprintf("adapter version %d does not compile: %s", version, hookrelay.ErrorMessage(cerr)), cerr)}
	} else {
		out, err := RunAdapter(ctx, prog, version, snap.Validator(), adapter.Input{
			Body: cb.Body, Headers: cb.Header, Carrier: carrier.Name, ReceivedAt: cb.ReceivedAt})
		if err != nil {
			return err
		}
		r.Adapter = out
	}
	if err := r.Adapter.Err; err != nil {
		if carrier.AdapterOnFailure != db.AdapterPark {
			return err
		}
		r.Parked = hookrelay.ErrorMessage(err)
	}
	return nil
}

// fanOutEvent builds the envelope of r's event and adds the canonical
// endpoints it reaches (their filters read the envelope) to r.EndpointIDs.
func (r *Routed) fanOutEvent(snap *Snapshot, carrier db.Carrier, receivedAt time.Time) error {
	ev := r.Adapter.Event
	if err := hookrelay.CheckHeaderValue("event type", ev.Type); err != nil {
		// Sent as X-Hookrelay-Event-Type to canonical endpoints.
		return unprocessable(hookrelay.ReasonAdapterFailed,
			fmt.Sprintf("adapter version %d: %s", r.Adapter.Version, hookrelay.ErrorMessage(err)), err)
	}
	var err error
	r.CanonicalType = ev.Type
	r.CanonicalEvent, err = EnvelopeOf(ev, r.Adapter.Version, carrier.Name, r.OrderingKey, ev.Merchant, receivedAt)
	if err != nil {
		return unprocessable(hookrelay.ReasonAdapterFailed,
			fmt.Sprintf("adapter version %d: the event cannot be encoded", r.Adapter.Version), err)
	}
	var evVals []filter.Value
	if filterPaths := snap.FilterPaths(); len(filterPaths) > 0 {
		if _, evVals, err = ParseCallbackValues(r.CanonicalEvent, filterPaths...); err != nil {
			return unprocessable(hookrelay.ReasonAdapterFailed,
				fmt.Sprintf("adapter version %d: the event cannot be read", r.Adapter.Version), err)
		}
	}
	if canon := snap.FanOutCanonical(carrier.ID, ev.Type, r.MerchantRef, evVals); len(canon) > 0 {
		r.CanonicalEndpointIDs = canon
		r.EndpointIDs = append(r.EndpointIDs, canon...)
		slices.Sort(r.EndpointIDs)
	}
	return nil
}

var errParse = hookrelay.WithReason(hookrelay.Errorf(hookrelay.EINVALID, "body must be one valid JSON object"), hookrelay.ReasonParse)

func headerOr(h http.Header, name string, f Field) string {
	if v := h.Get(name); v != "" {
		return v
	}
	return f.Value
}

// checkRouting checks the ordering key, event type and merchant reference of
// a callback before it joins a batch: each becomes a text column, and a value
// PostgreSQL cannot store would fail the statement of every callback batched
// with it. The ordering key also must not begin with U+0001, which marks a
// replay chain (hookrelay.ReplayChainMark). The ordering key and event type
// are sent in every delivery's headers (X-Hookrelay-Ordering-Key,
// X-Hookrelay-Event-Type), so they also must be valid header values
// (hookrelay.CheckHeaderValue): one with a control character could never be
// sent. The error names where the value came from (header or body path).
func checkRouting(h http.Header, carrier db.Carrier, orderingKey, eventType, merchantRef string) error {
	for _, v := range [...]routingValue{
		{orderingKey, "X-Ordering-Key", carrier.OrderingKeyField, "ordering key", true},
		{eventType, "X-Event-Type", carrier.EventTypeField, "event type", true},
		{merchantRef, "X-Merchant-Id", carrier.MerchantField, "merchant id", false},
	} {
		// The field's name is only built for a value refused: checking
		// costs no allocation on the way every valid callback takes.
		if v.check("") != nil {
			field := v.header + " header"
			if h.Get(v.header) == "" {
				field = fmt.Sprintf("%s (body field %q)", v.what, v.path)
			}
			return v.check(field)
		}
	}
	return nil
}

// routingValue is one routing value of a callback and where it came from.
type routingValue struct {
	value, header, path, what string
	sent                      bool // in a delivery's headers
}

// check applies the rules of v's value, naming it field in the error.
func (v *routingValue) check(field string) error {
	check := hookrelay.CheckText
	if v.header == "X-Ordering-Key" {
		check = hookrelay.CheckOrderingKey
	}
	if err := check(field, v.value, MaxRoutingValue); err != nil {
		return err
	}
	if v.sent {
		return hookrelay.CheckHeaderValue(field, v.value)
	}
	return nil
}

// CarrierByKeyPrefix returns the one carrier whose key's displayable
// prefix (hookrelay.KeyDisplayPrefix) is prefix: it names the carrier a
// refused key was probably meant for. It finds none when two carriers share
// the prefix.
func (s *Snapshot) CarrierByKeyPrefix(prefix string) (db.Carrier, bool) {
	id := s.carrierByKeyPrefix[prefix]
	if id == 0 {
		return db.Carrier{}, false
	}
	c, ok := s.carrierByID[id]
	return c, ok
}
