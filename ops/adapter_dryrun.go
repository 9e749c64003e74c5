package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/adapter"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ingest"
)

// Dry runs.
const (
	// MaxDryRunLimit bounds the callbacks one dry run reads.
	MaxDryRunLimit = 1000
	// DefaultDryRunLimit is the callbacks a dry run reads by default.
	DefaultDryRunLimit = 100
	// dryRunBudget bounds the time a dry run spends running adapters: the
	// callbacks left when it is spent are not run (DryRun.Truncated).
	dryRunBudget = 30 * time.Second
)

// dryRunWindows are the spans of time, latest first, a dry run looks back
// through for the carrier's last callbacks: the narrowest that holds
// enough of them is read.
var dryRunWindows = []time.Duration{time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 31 * 24 * time.Hour}

// Outcomes of one adapter run on one callback.
const (
	OutcomeEvent   = "event"
	OutcomeDropped = "dropped"
	OutcomeFailed  = "failed"
)

// Diffs of a dry run's result for a callback against the active version's.
const (
	DiffSame    = "same"    // the same event, or both dropped, or both failed
	DiffChanged = "changed" // another event, or another outcome
)

// AdapterRun is what one adapter version made of one callback.
type AdapterRun struct {
	Outcome string // OutcomeEvent, OutcomeDropped or OutcomeFailed
	// Event is the envelope canonical endpoints would receive.
	Event json.RawMessage
	// Reason and Error say why it failed.
	Reason hookrelay.Reason
	Error  string
	event  *adapter.Event
}

// DryRunItem is a dry run's result for one stored callback.
type DryRunItem struct {
	MessageID  int64
	ReceivedAt time.Time
	Result     AdapterRun
	// Active is the active version's result, and Diff how Result differs
	// from it; both empty when the carrier has no active version, or it is
	// the version that ran.
	Active *AdapterRun
	Diff   string
}

// DryRunSummary counts a dry run's results.
type DryRunSummary struct {
	Callbacks int
	Events    int
	Dropped   int
	Failed    int
	// SchemaFailed and LimitFailed count the failures that were the
	// schema's (schema_invalid) and the limits' (adapter_limit).
	SchemaFailed int
	LimitFailed  int
	// Same and Changed compare with the active version (both 0 without one).
	Same    int
	Changed int
}

// DryRun is the result of running an adapter version over a carrier's last
// stored callbacks.
type DryRun struct {
	Version       int
	ActiveVersion int // 0: none
	Summary       DryRunSummary
	Items         []DryRunItem
	// Truncated reports whether the time budget ran out before every
	// callback read was run (the items stop there).
	Truncated bool
}

// DryRunAdapter runs version of the carrier's adapter over its last limit
// stored callbacks (newest first; offloaded bodies are read from the S3
// store), with the schema check of ingest, and compares each result with
// the active version's. The callbacks' headers are not stored: the adapter
// sees their bodies with no headers. It changes nothing. Operators only.
func (s *Service) DryRunAdapter(ctx context.Context, carrierID int64, version, limit int) (DryRun, error) {
	if limit == 0 {
		limit = DefaultDryRunLimit
	}
	if limit < 1 || limit > MaxDryRunLimit {
		return DryRun{}, hookrelay.Errorf(hookrelay.EINVALID, "limit must be 1 to %d", MaxDryRunLimit)
	}
	car, err := s.db.CarrierGet(ctx, carrierID)
	if err != nil {
		return DryRun{}, err
	}
	cand, err := s.compileVersion(ctx, carrierID, version)
	if err != nil {
		return DryRun{}, err
	}
	var active *adapter.Program
	if car.AdapterVersion != 0 && car.AdapterVersion != version {
		if active, err = s.compileVersion(ctx, carrierID, car.AdapterVersion); err != nil {
			return DryRun{}, err
		}
	}
	var msgs []db.StoredCallback
	now := s.now()
	for _, w := range dryRunWindows {
		if msgs, err = s.db.MessageCarrierRecent(ctx, carrierID, now.Add(-w), limit); err != nil {
			return DryRun{}, err
		}
		if len(msgs) >= limit {
			break
		}
	}
	validator := s.routes.Validator()
	out := DryRun{Version: version, Items: []DryRunItem{}}
	if active != nil {
		out.ActiveVersion = car.AdapterVersion
	}
	deadline := time.Now().Add(dryRunBudget)
	for _, m := range msgs {
		if time.Now().After(deadline) {
			out.Truncated = true
			break
		}
		body, err := s.storedBody(ctx, m)
		if err != nil {
			return DryRun{}, err
		}
		in := adapter.Input{Body: body, Headers: map[string][]string{}, Carrier: car.Name, ReceivedAt: m.ReceivedAt}
		item := DryRunItem{MessageID: m.ID, ReceivedAt: m.ReceivedAt}
		if item.Result, err = runOnce(ctx, cand, version, validator, in, car, m); err != nil {
			return DryRun{}, err
		}
		count(&out.Summary, item.Result)
		if active != nil {
			a, err := runOnce(ctx, active, car.AdapterVersion, validator, in, car, m)
			if err != nil {
				return DryRun{}, err
			}
			item.Active = &a
			if sameRun(item.Result, a) {
				item.Diff = DiffSame
				out.Summary.Same++
			} else {
				item.Diff = DiffChanged
				out.Summary.Changed++
			}
		}
		out.Items = append(out.Items, item)
	}
	return out, nil
}

// compileVersion compiles one stored version of the carrier's adapter.
func (s *Service) compileVersion(ctx context.Context, carrierID int64, version int) (*adapter.Program, error) {
	a, err := s.db.CarrierAdapterGet(ctx, carrierID, version)
	if err != nil {
		return nil, err
	}
	p, err := adapter.Compile(a.Source, ingest.AdapterLimits)
	if err != nil {
		return nil, hookrelay.WrapError(hookrelay.EPRECONDITION, "adapter version does not compile: "+hookrelay.ErrorMessage(err), err)
	}
	return p, nil
}

// runOnce runs prog on one stored callback m.
func runOnce(ctx context.Context, prog *adapter.Program, version int, v ingest.EventValidator, in adapter.Input, car db.Carrier, m db.StoredCallback) (AdapterRun, error) {
	o, err := ingest.RunAdapter(ctx, prog, version, v, in)
	if err != nil {
		return AdapterRun{}, err
	}
	switch {
	case o.Err != nil:
		return AdapterRun{Outcome: OutcomeFailed, Reason: hookrelay.ReasonOf(o.Err), Error: hookrelay.ErrorMessage(o.Err)}, nil
	case o.Dropped:
		return AdapterRun{Outcome: OutcomeDropped}, nil
	}
	key := o.Event.OrderingKey
	if key == "" {
		key = m.OrderingKey
	}
	env, err := ingest.EnvelopeOf(o.Event, version, car.Name, key, o.Event.Merchant, m.ReceivedAt)
	if err != nil {
		return AdapterRun{Outcome: OutcomeFailed, Reason: hookrelay.ReasonAdapterFailed, Error: "the event cannot be encoded"}, nil
	}
	return AdapterRun{Outcome: OutcomeEvent, Event: env, event: o.Event}, nil
}

func count(sum *DryRunSummary, r AdapterRun) {
	sum.Callbacks++
	switch r.Outcome {
	case OutcomeEvent:
		sum.Events++
	case OutcomeDropped:
		sum.Dropped++
	case OutcomeFailed:
		sum.Failed++
		switch r.Reason {
		case hookrelay.ReasonSchemaInvalid:
			sum.SchemaFailed++
		case hookrelay.ReasonAdapterLimit:
			sum.LimitFailed++
		}
	}
}

// sameRun reports whether two versions' results for one callback are the
// same: the same outcome and, for events, the same fields and the same
// data (as JSON values: key order and spacing aside).
func sameRun(a, b AdapterRun) bool {
	if a.Outcome != b.Outcome {
		return false
	}
	if a.Outcome == OutcomeFailed {
		return a.Reason == b.Reason
	}
	if a.Outcome != OutcomeEvent {
		return true
	}
	x, y := a.event, b.event
	if x.Type != y.Type || x.OrderingKey != y.OrderingKey || x.Merchant != y.Merchant || !x.OccurredAt.Equal(y.OccurredAt) {
		return false
	}
	if bytes.Equal(x.Data, y.Data) {
		return true
	}
	var dx, dy any
	if json.Unmarshal(x.Data, &dx) != nil || json.Unmarshal(y.Data, &dy) != nil {
		return false
	}
	return reflect.DeepEqual(dx, dy)
}

// StoredSamples returns the carrier's last n stored callbacks (ids and
// times, newest first) for a test pane to pick from.
func (s *Service) StoredSamples(ctx context.Context, carrierID int64, n int) ([]db.StoredCallback, error) {
	return s.db.MessageCarrierRecent(ctx, carrierID, s.now().Add(-dryRunWindows[len(dryRunWindows)-1]), n)
}

// AdapterTest is a source to try on one callback: a pasted body (with
// headers), or a stored callback of the carrier (MessageID).
type AdapterTest struct {
	Source    string
	Body      []byte
	Header    map[string][]string
	MessageID int64
}

// TestAdapter compiles a source that need not be stored and runs it on one
// callback, with the schema check of ingest: the event, the drop or the
// error (a source that does not compile is a failed run naming the line).
// It stores nothing. Operators only.
func (s *Service) TestAdapter(ctx context.Context, carrierID int64, in AdapterTest) (AdapterRun, error) {
	car, err := s.db.CarrierGet(ctx, carrierID)
	if err != nil {
		return AdapterRun{}, err
	}
	m := db.StoredCallback{ReceivedAt: s.now(), Payload: in.Body}
	if in.MessageID != 0 {
		recent, err := s.StoredSamples(ctx, carrierID, MaxDryRunLimit)
		if err != nil {
			return AdapterRun{}, err
		}
		found := false
		for _, r := range recent {
			if r.ID == in.MessageID {
				m, found = r, true
				break
			}
		}
		if !found {
			return AdapterRun{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "stored callback %d of this carrier not found", in.MessageID)
		}
		in.Header = nil
	}
	body, err := s.storedBody(ctx, m)
	if err != nil {
		return AdapterRun{}, err
	}
	prog, err := adapter.Compile(in.Source, ingest.AdapterLimits)
	if err != nil {
		return AdapterRun{Outcome: OutcomeFailed, Reason: hookrelay.ReasonAdapterFailed, Error: "does not compile: " + hookrelay.ErrorMessage(err)}, nil
	}
	if in.Header == nil {
		in.Header = map[string][]string{}
	}
	return runOnce(ctx, prog, 0, s.routes.Validator(), adapter.Input{Body: body, Headers: in.Header, Carrier: car.Name, ReceivedAt: m.ReceivedAt}, car, m)
}
