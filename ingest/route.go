package ingest

import (
	"fmt"
	"net/http"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/filter"
)

// MaxIdempotencyKey bounds a callback's Idempotency-Key header.
const MaxIdempotencyKey = 255

// MaxRoutingValue bounds the ordering key, event type and merchant
// reference of a callback.
const MaxRoutingValue = 1024

// Routed is what the intake makes of a callback's body and headers: its
// routing values and the endpoints it goes to.
type Routed struct {
	OrderingKey string
	EventType   string
	MerchantRef string
	// EndpointIDs are the endpoints it fans out to (Snapshot.FanOut).
	EndpointIDs []int64
}

// Route reads a callback of carrier (its headers and body, already
// authenticated) as the intake does: the routing values from the headers
// (X-Ordering-Key, X-Event-Type, X-Merchant-Id) or else from the carrier's
// body fields, their checks, and the fan-out of snap. It is the one
// implementation of these rules, for POST /v1/callbacks and for trying a
// sample (ops.Service.TryCallback). A refusal names its reason
// (hookrelay.ReasonOf): parse, missing_ordering_key or invalid_field.
func Route(snap *Snapshot, carrier db.Carrier, header http.Header, body []byte) (Routed, error) {
	var fields []Field
	var vals []filter.Value
	var err error
	if filterPaths := snap.FilterPaths(); len(filterPaths) == 0 {
		fields, err = ParseCallback(body, carrier.OrderingKeyField, carrier.EventTypeField, carrier.MerchantField)
	} else {
		paths := append([]string{carrier.OrderingKeyField, carrier.EventTypeField, carrier.MerchantField}, filterPaths...)
		fields, vals, err = ParseCallbackValues(body, paths...)
		if err == nil {
			vals = vals[3:]
		}
	}
	if err != nil {
		return Routed{}, errParse
	}
	r := Routed{
		OrderingKey: headerOr(header, "X-Ordering-Key", fields[0]),
		EventType:   headerOr(header, "X-Event-Type", fields[1]),
		MerchantRef: headerOr(header, "X-Merchant-Id", fields[2]),
	}
	if r.OrderingKey == "" {
		return Routed{}, hookrelay.WithReason(hookrelay.Errorf(hookrelay.EINVALID,
			"missing ordering key: send X-Ordering-Key or a string or number at %q", carrier.OrderingKeyField),
			hookrelay.ReasonMissingOrderingKey)
	}
	if err := checkRouting(header, carrier, r.OrderingKey, r.EventType, r.MerchantRef); err != nil {
		return Routed{}, hookrelay.WithReason(err, hookrelay.ReasonInvalidField)
	}
	r.EndpointIDs = snap.FanOut(carrier.ID, r.EventType, r.MerchantRef, vals)
	return r, nil
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
