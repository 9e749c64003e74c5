package adapter

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/hookrelay/hookrelay"
)

// memorySampleEvery is how often a running call's watchdog wakes to check
// its time and the memory allocated since it started. A call shorter than
// that (nearly every call) never wakes it.
const memorySampleEvery = 2 * time.Millisecond

// allocsMetric is the process's cumulative heap allocation.
const allocsMetric = "/gc/heap/allocs:bytes"

// longCalls counts the calls (of every Program) running longer than
// memorySampleEvery. The heap allocated while calls run is only known for
// the whole process, so each long call is charged an equal share of it:
// a call that allocates nothing beside one that allocates without bound is
// charged half of it, not all.
var longCalls atomic.Int64

// vm is one runtime of a Program, used by one call at a time.
type vm struct {
	p       *Program
	rt      *goja.Runtime
	factory goja.Callable     // returns a fresh transform
	now     time.Time         // what Date.now() returns during the call
	keys    map[string]string // the body parser's interned object keys
	sample  []metrics.Sample
	timer   *time.Timer

	mu sync.Mutex // guards the fields below, shared with the watchdog
	// running reports whether a call is in progress (the watchdog acts
	// only then).
	running  bool
	gen      uint64 // counts calls, so that a late cancel of one misses the next
	start    time.Time
	clock    int32 // the CPU clock of the call's thread, when clockOK
	clockOK  bool
	cpu0     time.Duration // the clock at the first tick, less the wall time before it (at most memorySampleEvery)
	allocs0  uint64        // the process's allocations at the last tick
	long     bool          // the call is counted in longCalls
	charged  uint64        // the call's share of the allocations since it started
	stopped  *LimitError   // the limit that stopped the call, if any
	canceled error         // the context error that stopped the call, if any
}

// newVM makes a runtime ready for calls: the hookrelay object installed, built-ins
// guarded and frozen, the adapter's factory loaded.
func (p *Program) newVM() (*vm, error) {
	v := &vm{p: p, rt: goja.New(), now: time.Unix(0, 0).UTC(), keys: make(map[string]string)}
	v.sample = []metrics.Sample{{Name: allocsMetric}}
	v.timer = time.AfterFunc(time.Hour, v.tick)
	v.timer.Stop()
	rt := v.rt
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	rt.SetMaxCallStackSize(p.lim.MaxCallDepth)
	rt.SetTimeSource(func() time.Time { return v.now })
	if err := installHookrelayObject(rt); err != nil {
		return nil, hookrelay.WrapError(hookrelay.EINTERNAL, "adapter runtime: the hookrelay object", err)
	}
	setupVal, err := rt.RunProgram(setupProgram)
	if err != nil {
		return nil, hookrelay.WrapError(hookrelay.EINTERNAL, "adapter runtime setup", err)
	}
	setup, _ := goja.AssertFunction(setupVal)
	limit := rt.ToValue(func(call goja.FunctionCall) goja.Value {
		v.limit(Limit(call.Argument(0).String()), call.Argument(1).String())
		panic(rt.NewTypeError(call.Argument(1).String()))
	})
	if _, err := setup(goja.Undefined(), limit, rt.ToValue(p.lim.MaxStringLength), rt.ToValue(p.lim.MaxArrayLength), rt.ToValue(maxDataDepth)); err != nil {
		return nil, hookrelay.WrapError(hookrelay.EINTERNAL, "adapter runtime setup", err)
	}
	f, err := rt.RunProgram(p.prog)
	if err != nil {
		return nil, hookrelay.WrapError(hookrelay.EINTERNAL, "adapter factory", err)
	}
	v.factory, _ = goja.AssertFunction(f)
	return v, nil
}

// limit stops the running call over l: the interrupt is taken at the next
// instruction, so not even a catch block of the adapter runs.
func (v *vm) limit(l Limit, detail string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopped == nil && v.canceled == nil {
		v.stopped = &LimitError{Limit: l, Detail: detail}
		v.rt.Interrupt(v.stopped)
	}
}

// tick is the watchdog: it stops a call that ran out of time or allocated
// too much, or sets itself to look again.
func (v *vm) tick() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.running || v.stopped != nil || v.canceled != nil {
		return
	}
	lim := v.p.lim
	wall := time.Since(v.start)
	used := wall
	if v.clockOK {
		// Calls shorter than a tick (nearly all) read no clock: the first
		// tick takes the thread's clock and counts the time before it as
		// at most one tick of CPU (a late timer does not count against
		// the call).
		if c, ok := readCPU(v.clock); ok {
			if !v.long {
				v.cpu0 = c - min(wall, memorySampleEvery)
			}
			used = c - v.cpu0
		}
	}
	if used >= lim.CPUTime || wall >= wallBound(lim.CPUTime) {
		v.stopped = &LimitError{Limit: LimitTime, Detail: fmt.Sprintf("ran longer than %v", lim.CPUTime)}
		v.rt.Interrupt(v.stopped)
		return
	}
	if !v.long {
		// Allocation too is counted from the first tick.
		v.long = true
		longCalls.Add(1)
		v.allocs0 = v.allocs()
	}
	if a := v.allocs(); a > v.allocs0 {
		v.charged += (a - v.allocs0) / uint64(max(1, longCalls.Load()))
		v.allocs0 = a
	}
	if v.charged > uint64(lim.MaxMemoryBytes) {
		v.stopped = &LimitError{Limit: LimitMemory, Detail: fmt.Sprintf("allocated more than %d bytes", lim.MaxMemoryBytes)}
		v.rt.Interrupt(v.stopped)
		return
	}
	v.timer.Reset(min(memorySampleEvery, lim.CPUTime-used))
}

// wallBound is the wall-clock time after which a call is stopped whatever
// CPU time it used (a call that waits for the CPU that long is stopped
// too; the caller's context may stop it sooner).
func wallBound(cpu time.Duration) time.Duration { return max(10*cpu, time.Second) }

// allocs reads the process's cumulative heap allocation.
func (v *vm) allocs() uint64 {
	metrics.Read(v.sample)
	if v.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return v.sample[0].Value.Uint64()
}

// begin starts the watchdog of a call and returns the call's number.
func (v *vm) begin() uint64 {
	v.mu.Lock()
	v.running = true
	v.gen++
	v.start = time.Now()
	v.clock, v.clockOK = threadCPU()
	v.charged = 0
	v.stopped, v.canceled = nil, nil
	gen := v.gen
	v.mu.Unlock()
	v.timer.Reset(min(memorySampleEvery, v.p.lim.CPUTime))
	return gen
}

// end stops the watchdog; after it no interrupt can reach the runtime.
func (v *vm) end() {
	v.timer.Stop()
	v.mu.Lock()
	v.running = false
	if v.long {
		v.long = false
		longCalls.Add(-1)
	}
	v.mu.Unlock()
}

// cancel stops call gen because its context ended.
func (v *vm) cancel(gen uint64, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.running && v.gen == gen && v.stopped == nil && v.canceled == nil {
		v.canceled = err
		v.rt.Interrupt(err)
	}
}

// run runs one call. clean reports whether the runtime may be reused: a
// runtime a call was stopped in (an interrupt, a stack overflow, a panic)
// is dropped.
func (v *vm) run(ctx context.Context, in Input) (ev Event, drop bool, err error, clean bool) {
	v.now = in.ReceivedAt
	if v.now.IsZero() {
		v.now = time.Unix(0, 0).UTC()
	}
	gen := v.begin()
	stopCtx := func() bool { return false }
	if ctx.Done() != nil {
		stopCtx = context.AfterFunc(ctx, func() { v.cancel(gen, ctx.Err()) })
	}
	ev, drop, err = v.call(in)
	stopCtx()
	v.end()
	clean = true
	switch {
	case v.stopped != nil:
		ev, drop, err, clean = Event{}, false, wrapLimit(v.stopped), false
	case v.canceled != nil:
		ev, drop, err, clean = Event{}, false, ctxError(v.canceled), false
	case err != nil:
		var so *goja.StackOverflowError
		var ie *goja.InterruptedError
		var internal *hookrelay.Error
		switch {
		case errors.As(err, &so):
			err, clean = limitError(LimitStack, "call stack deeper than %d", v.p.lim.MaxCallDepth), false
		case errors.As(err, &ie):
			err, clean = hookrelay.WrapError(hookrelay.EINTERNAL, "adapter interrupted", err), false
		case errors.As(err, &internal) && internal.Code == hookrelay.EINTERNAL:
			clean = false
		}
	}
	v.rt.ClearInterrupt()
	return ev, drop, err, clean
}

// call runs the transform on in and converts its result, all under the
// watchdog (converting runs adapter code too: getters, toJSON, toString).
// A Go panic in the engine becomes an EINTERNAL error.
func (v *vm) call(in Input) (ev Event, drop bool, err error) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(error); ok {
				var so *goja.StackOverflowError
				var ie *goja.InterruptedError
				if errors.As(e, &so) || errors.As(e, &ie) {
					ev, drop, err = Event{}, false, e
					return
				}
				var ex *goja.Exception
				if errors.As(e, &ex) { // thrown by adapter code Go called: a getter, toJSON
					ev, drop, err = Event{}, false, v.thrown(ex)
					return
				}
			}
			ev, drop, err = Event{}, false, hookrelay.WrapError(hookrelay.EINTERNAL, "adapter engine failure", fmt.Errorf("panic: %v", x))
		}
	}()
	cb, err := v.callback(in)
	if err != nil {
		return Event{}, false, err
	}
	transform, err := v.factory(goja.Undefined())
	if err != nil {
		return Event{}, false, v.thrown(err)
	}
	fn, ok := goja.AssertFunction(transform)
	if !ok {
		return Event{}, false, resultError("the adapter defines no transform function")
	}
	res, err := fn(goja.Undefined(), cb)
	if err != nil {
		return Event{}, false, v.thrown(err)
	}
	return v.event(res)
}

// checkTransform runs the factory once (the adapter's top level) and
// reports whether it gives a transform function.
func (v *vm) checkTransform() error {
	v.begin()
	var transform goja.Value
	err := func() (err error) {
		defer func() {
			if x := recover(); x != nil {
				err = fmt.Errorf("panic: %v", x)
			}
		}()
		transform, err = v.factory(goja.Undefined())
		if err != nil {
			err = v.thrown(err) // under the watchdog: it may run the value's toString
		}
		return err
	}()
	v.end()
	v.rt.ClearInterrupt()
	switch {
	case v.stopped != nil:
		return wrapLimit(v.stopped)
	case err != nil:
		var so *goja.StackOverflowError
		if errors.As(err, &so) {
			return limitError(LimitStack, "call stack deeper than %d", v.p.lim.MaxCallDepth)
		}
		return err
	}
	if _, ok := goja.AssertFunction(transform); !ok {
		return compileError(&CompileError{Message: "the adapter defines no function transform(callback)"})
	}
	return nil
}

// thrown converts what a call of adapter code returned as an error: a
// JavaScript exception becomes a *ScriptError; the engine's own stops
// (interrupts, stack overflow) pass through for run to classify.
func (v *vm) thrown(err error) error {
	var ex *goja.Exception
	if !errors.As(err, &ex) {
		return err
	}
	var so *goja.StackOverflowError
	var ie *goja.InterruptedError
	if errors.As(err, &so) || errors.As(err, &ie) {
		return err
	}
	se := &ScriptError{Message: exceptionMessage(ex)}
	for _, f := range ex.Stack() {
		if f.SrcName() != "adapter.js" {
			continue
		}
		pos := f.Position()
		line, col := sourcePosition(pos.Line, pos.Column)
		if se.Line == 0 {
			se.Line, se.Column = line, col
		}
		se.Stack += fmt.Sprintf("    at %s (line %d, column %d)\n", f.FuncName(), line, col)
	}
	return scriptError(se)
}

// exceptionMessage is the text of a thrown value: "Name: message" for an
// Error, the value as a string otherwise, cut to 1,000 bytes.
func exceptionMessage(ex *goja.Exception) (s string) {
	// String() runs the value's toString, adapter code that may throw in
	// turn (or be stopped): the text is then a fixed one, never a panic.
	defer func() {
		if recover() != nil {
			s = "an exception whose toString failed"
		}
	}()
	val := ex.Value()
	s = "undefined"
	if val != nil {
		s = val.String()
	}
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	return s
}
