package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/adapter"
	"github.com/hookrelay/hookrelay/db"
)

// MaxEventDataBytes bounds the data of a canonical event (as JSON): the
// event is stored inline beside the original body, whatever its size.
const MaxEventDataBytes = 64 << 10

// AdapterLimits are the limits every adapter runs with at ingest, in dry
// runs and in tries: the engine's defaults, the event's data held to
// MaxEventDataBytes.
var AdapterLimits = adapter.Limits{MaxOutputBytes: MaxEventDataBytes}.WithDefaults()

// EventValidator checks the data of a canonical event against the JSON
// Schema of its type. It returns the schema version that accepted it, or
// a hookrelay.EINVALID error naming why not (an unknown type, data that
// does not match); any other error means it could not tell, and the
// callback is answered with it (503 for hookrelay.EUNAVAILABLE), not
// refused as the carrier's fault.
type EventValidator interface {
	Validate(ctx context.Context, eventType string, data []byte) (version int, err error)
}

// compiledAdapter is a carrier's active adapter version, compiled.
type compiledAdapter struct {
	version int
	program *adapter.Program
	// err is why the stored source does not compile (written by another
	// version of the engine): every callback of the carrier fails with it.
	err error
}

type adapterKey struct {
	carrierID int64
	version   int
}

// compileAdapters returns the compiled active adapters of as by carrier,
// reusing the programs of cache (compiled once per version) and leaving in
// it only those still active.
func compileAdapters(as []db.CarrierAdapter, cache map[adapterKey]*compiledAdapter) map[int64]*compiledAdapter {
	out := make(map[int64]*compiledAdapter, len(as))
	keep := make(map[adapterKey]bool, len(as))
	for _, a := range as {
		k := adapterKey{a.CarrierID, a.Version}
		keep[k] = true
		c, ok := cache[k]
		if !ok {
			p, err := adapter.Compile(a.Source, AdapterLimits)
			c = &compiledAdapter{version: a.Version, program: p, err: err}
			cache[k] = c
		}
		out[a.CarrierID] = c
	}
	for k := range cache {
		if !keep[k] {
			delete(cache, k)
		}
	}
	return out
}

// Envelope is the body a canonical endpoint receives: the event in the shape
// of a Standard Webhooks payload (type, timestamp, data) with where it came
// from. The message id is the delivery's Webhook-Id header.
type Envelope struct {
	Type string `json:"type"`
	// Timestamp is when the event occurred (the adapter's occurred_at), or
	// else when the callback was received.
	Timestamp   time.Time `json:"timestamp"`
	Carrier     string    `json:"carrier"`
	OrderingKey string    `json:"ordering_key"`
	Merchant    string    `json:"merchant,omitempty"`
	// AdapterVersion is the carrier's adapter version that made it.
	AdapterVersion int             `json:"adapter_version"`
	Data           json.RawMessage `json:"data"`
}

// AdapterOutcome is what a carrier's adapter made of one callback.
type AdapterOutcome struct {
	// Version is the adapter version that ran (0: the carrier has none).
	Version int
	// Event is the event, when it made one that passed its schema.
	Event *adapter.Event
	// SchemaVersion is the version of the event type's schema that accepted
	// it (0 without a validator).
	SchemaVersion int
	// Dropped reports whether the adapter returned no event for it.
	Dropped bool
	// Err is why it failed (the adapter's error or the schema's), with its
	// refusal reason (hookrelay.ReasonOf): adapter_failed, adapter_limit or
	// schema_invalid, and code EUNPROCESSABLE.
	Err error
}

// RunAdapter runs prog (version) on a callback and checks its event
// against its type's schema with v (nil: no check). An error it returns
// is not the callback's fault (the validator could not tell, ctx ended);
// the callback's own failure is in the outcome.
func RunAdapter(ctx context.Context, prog *adapter.Program, version int, v EventValidator, in adapter.Input) (AdapterOutcome, error) {
	out := AdapterOutcome{Version: version}
	ev, drop, err := prog.Run(ctx, in)
	switch {
	case err != nil && hookrelay.CodeOf(err) == hookrelay.ETIMEOUT && ctx.Err() != nil:
		return out, err
	case err != nil:
		reason := hookrelay.ReasonAdapterFailed
		if errors.Is(err, adapter.ErrLimit) {
			reason = hookrelay.ReasonAdapterLimit
		}
		out.Err = unprocessable(reason, fmt.Sprintf("adapter version %d failed: %s", version, hookrelay.ErrorMessage(err)), err)
		return out, nil
	case drop:
		out.Dropped = true
		return out, nil
	}
	if v != nil {
		sv, err := v.Validate(ctx, ev.Type, ev.Data)
		if err != nil {
			if c := hookrelay.CodeOf(err); c != hookrelay.EINVALID {
				// Not the event's fault: the catalog could not tell (it is
				// unavailable, or a stored schema does not compile).
				return out, err
			}
			out.Err = unprocessable(hookrelay.ReasonSchemaInvalid,
				fmt.Sprintf("event of adapter version %d does not match the schema of %q: %s", version, ev.Type, hookrelay.ErrorMessage(err)), err)
			return out, nil
		}
		out.SchemaVersion = sv
	}
	out.Event = &ev
	return out, nil
}

func unprocessable(reason hookrelay.Reason, msg string, cause error) error {
	return hookrelay.WithReason(hookrelay.WrapError(hookrelay.EUNPROCESSABLE, msg, cause), reason)
}

// EnvelopeOf returns the envelope of ev as canonical endpoints receive it.
func EnvelopeOf(ev *adapter.Event, version int, carrier, orderingKey, merchant string, receivedAt time.Time) ([]byte, error) {
	at := ev.OccurredAt
	if at.IsZero() {
		at = receivedAt
	}
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return json.Marshal(Envelope{Type: ev.Type, Timestamp: at.UTC(), Carrier: carrier, OrderingKey: orderingKey,
		Merchant: merchant, AdapterVersion: version, Data: data})
}
