package adapter

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookrelay/hookrelay"
)

// ErrLimit is what every *LimitError is (errors.Is): a call stopped because
// it went over one of its Limits, as opposed to an adapter's own error.
var ErrLimit = errors.New("adapter limit exceeded")

// Limit names which of the Limits a call went over.
type Limit string

// The limits a call can go over.
const (
	LimitTime   Limit = "time"   // Limits.CPUTime
	LimitMemory Limit = "memory" // Limits.MaxMemoryBytes
	LimitOutput Limit = "output" // Limits.MaxOutputBytes
	LimitString Limit = "string" // Limits.MaxStringLength
	LimitArray  Limit = "array"  // Limits.MaxArrayLength
	LimitStack  Limit = "stack"  // Limits.MaxCallDepth
	LimitInput  Limit = "input"  // Limits.MaxInputDepth
)

// LimitError is a call stopped over one of its Limits.
type LimitError struct {
	Limit  Limit
	Detail string // what went over, e.g. "ran longer than 100ms"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("adapter %s limit: %s", e.Limit, e.Detail)
}

// Is reports whether target is ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// ScriptError is the adapter's own failure: an exception it threw (or the
// engine threw for it, e.g. a TypeError), or a result that is not an event.
// Line and Column (1-based, 0 when unknown) point into the adapter's source.
type ScriptError struct {
	Message string // e.g. "TypeError: Cannot read property 'x' of undefined"
	Line    int
	Column  int
	Stack   string // the JavaScript stack, when there is one
}

func (e *ScriptError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("adapter error at line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return "adapter error: " + e.Message
}

// CompileError is an adapter source that does not compile, or that has no
// transform function.
type CompileError struct {
	Message string
	Line    int // 1-based; 0 when the error has no position
	Column  int
}

func (e *CompileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return e.Message
}

// limitError returns the *hookrelay.Error (EINVALID) of a limit.
func limitError(l Limit, format string, args ...any) error {
	le := &LimitError{Limit: l, Detail: fmt.Sprintf(format, args...)}
	return hookrelay.WrapError(hookrelay.EINVALID, le.Error(), le)
}

// wrapLimit returns the *hookrelay.Error (EINVALID) of le.
func wrapLimit(le *LimitError) error {
	return hookrelay.WrapError(hookrelay.EINVALID, le.Error(), le)
}

// scriptError returns the *hookrelay.Error (EINVALID) of se.
func scriptError(se *ScriptError) error {
	return hookrelay.WrapError(hookrelay.EINVALID, se.Error(), se)
}

// resultError is a ScriptError about what transform returned.
func resultError(format string, args ...any) error {
	return scriptError(&ScriptError{Message: fmt.Sprintf(format, args...)})
}

// ctxError is the error of a call whose context ended.
func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return hookrelay.WrapError(hookrelay.ETIMEOUT, "adapter call: deadline exceeded", err)
	}
	return hookrelay.WrapError(hookrelay.ETIMEOUT, "adapter call canceled", err)
}
