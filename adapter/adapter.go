// Package adapter turns one carrier callback into one canonical event by
// running the carrier's adapter: a small JavaScript program (goja, a pure-Go
// engine) with a transform(callback) function. A Program is compiled once
// per adapter version and runs on pooled runtimes, each call with a clean
// global state, no IO, a time limit, bounded output and guarded allocations
// (docs/adapters.md; the engine was chosen in
// docs/decisions/015-adapter-engine.md).
//
// The package holds no state of its own and touches no database.
package adapter

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"time"
)

// Input is one callback as the carrier sent it.
type Input struct {
	Body       []byte
	Headers    http.Header
	Carrier    string    // the carrier's name/code
	ReceivedAt time.Time // also what the adapter's Date.now() and new Date() return
}

// Event is the canonical event an adapter makes of a callback.
type Event struct {
	Type        string          // e.g. "tracking.updated"; never empty
	OrderingKey string          // optional; empty = the carrier's own ordering key rule applies
	Merchant    string          // optional; a merchant name or id the event is for (narrows routing)
	OccurredAt  time.Time       // optional; zero when the adapter gave none
	Data        json.RawMessage // the event's data object (what the event type's JSON Schema validates)
}

// Field limits of an Event, checked on every Run.
const (
	MaxTypeLength        = 128  // bytes of Event.Type
	MaxOrderingKeyLength = 1024 // bytes of Event.OrderingKey
	MaxMerchantLength    = 256  // bytes of Event.Merchant
)

// Limits bounds one Run of a Program. A zero field takes its default
// (WithDefaults); docs/adapters.md says what each one bounds and what it
// does not.
type Limits struct {
	// CPUTime is the CPU time one call may use: the transform and the
	// conversion of its result. On Linux it is the CPU clock of the thread
	// the call runs on (locked to it), read from the first 2 ms check on
	// (the time before it counts as at most 2 ms); elsewhere, wall-clock
	// time. A call is also
	// stopped after 10 × CPUTime (at least 1 s) of wall-clock time,
	// whatever CPU it used. Checked every 2 ms between JavaScript
	// instructions, so a single built-in call (a sort, a JSON.stringify)
	// finishes before the call stops. Default 100 ms.
	CPUTime time.Duration
	// MaxMemoryBytes bounds the heap a call may allocate, checked for
	// calls that run longer than memorySampleEvery (2 ms), at each tick
	// from the first (what a call allocates in its first 2 ms is not
	// counted):
	// Go counts allocation only for the whole process, so a long call is
	// charged an equal share, among the calls running that long, of what
	// the process allocated meanwhile; a call over the bound is stopped at
	// its next instruction. An emergency brake against a runaway adapter
	// (a string doubled in a loop), not an exact account. Default 128 MiB.
	MaxMemoryBytes int64
	// MaxOutputBytes bounds the event's data as JSON. Default 256 KiB.
	MaxOutputBytes int
	// MaxStringLength bounds the strings String.prototype.repeat, padStart
	// and padEnd may make, in UTF-16 code units. Default 4 Mi.
	MaxStringLength int
	// MaxArrayLength bounds the length of an array the Array constructor
	// makes and of an array (or array-like) an Array method works on.
	// Default 1 Mi.
	MaxArrayLength int
	// MaxCallDepth bounds the JavaScript call stack. Default 256.
	MaxCallDepth int
	// MaxInputDepth bounds the nesting of a JSON body (objects and arrays)
	// before it is parsed; a deeper body is refused. Default 256.
	MaxInputDepth int
}

// Defaults of Limits.
const (
	DefaultCPUTime         = 100 * time.Millisecond
	DefaultMaxMemoryBytes  = 128 << 20
	DefaultMaxOutputBytes  = 256 << 10
	DefaultMaxStringLength = 4 << 20
	DefaultMaxArrayLength  = 1 << 20
	DefaultMaxCallDepth    = 256
	DefaultMaxInputDepth   = 256
)

// WithDefaults returns l with each zero (or negative) field set to its
// default.
func (l Limits) WithDefaults() Limits {
	if l.CPUTime <= 0 {
		l.CPUTime = DefaultCPUTime
	}
	if l.MaxMemoryBytes <= 0 {
		l.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxStringLength <= 0 {
		l.MaxStringLength = DefaultMaxStringLength
	}
	if l.MaxArrayLength <= 0 {
		l.MaxArrayLength = DefaultMaxArrayLength
	}
	if l.MaxCallDepth <= 0 {
		l.MaxCallDepth = DefaultMaxCallDepth
	}
	if l.MaxInputDepth <= 0 {
		l.MaxInputDepth = DefaultMaxInputDepth
	}
	return l
}

// Run runs the adapter on one callback. It returns the event, or drop true
// when the adapter returned null (the callback makes no event), or an error:
// an *hookrelay.Error (EINVALID) wrapping a *LimitError (errors.Is(err,
// ErrLimit)) when the call went over a limit, a *ScriptError when the
// adapter threw or returned something that is not an event, or EINVALID
// for a body deeper than MaxInputDepth; ETIMEOUT wrapping ctx's error when
// ctx ended first. An error concerns this call only: the next Run works.
func (p *Program) Run(ctx context.Context, in Input) (ev Event, drop bool, err error) {
	if err := ctx.Err(); err != nil {
		return Event{}, false, ctxError(err)
	}
	vm, err := p.get()
	if err != nil {
		return Event{}, false, err
	}
	// The call stays on this thread, so that the thread's CPU clock is the
	// call's (Limits.CPUTime).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ev, drop, err, clean := vm.run(ctx, in)
	if clean {
		p.put(vm)
	}
	return ev, drop, err
}
