package adapter

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/hookrelay/hookrelay"
)

// MaxSourceLength bounds an adapter's source, in bytes.
const MaxSourceLength = 256 << 10

// Program is a compiled adapter: compiled once, safe for concurrent use.
// Each Run takes an idle runtime of the Program (or makes one) and gives it
// back clean; a runtime a call stopped (a limit, a cancelled context) is
// dropped, never reused.
//
// A Program keeps up to GOMAXPROCS idle runtimes (at least 2), and drops
// the ones beyond. Not a sync.Pool: that empties at every second garbage
// collection, and preparing a runtime (its built-ins guarded and frozen)
// costs about 7 ms of CPU, while an idle one holds about 25 KB (and up to
// 512 object keys of bodies, at most 32 bytes each, that its parser reuses).
type Program struct {
	lim  Limits
	prog *goja.Program // the factory: an expression whose value returns transform
	idle chan *vm
}

// The adapter's source runs inside a function, so that every call starts
// from fresh top-level declarations (nothing an adapter keeps in a
// top-level variable outlives its call), in strict mode. The prefix stays
// on the source's first line so that line numbers are the author's.
const (
	sourcePrefix = `(function () { "use strict"; `
	sourceSuffix = "\n;return typeof transform === \"function\" ? transform : undefined; })"
)

// Compile compiles an adapter's source with lim (zero fields take their
// defaults) and checks that it defines a transform function. Its error is
// an *hookrelay.Error (EINVALID) wrapping a *CompileError that names the
// line and column, or a *ScriptError or *LimitError when running the
// source's top level failed.
func Compile(source string, lim Limits) (*Program, error) {
	if len(source) > MaxSourceLength {
		return nil, compileError(&CompileError{Message: fmt.Sprintf("source longer than %d bytes", MaxSourceLength)})
	}
	if err := hookrelay.CheckText("source", source, 0); err != nil {
		return nil, compileError(&CompileError{Message: hookrelay.ErrorMessage(err)})
	}
	wrapped := sourcePrefix + source + sourceSuffix
	ast, err := parser.ParseFile(nil, "adapter.js", wrapped, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, compileError(parseError(err).clamp(source))
	}
	gp, err := goja.CompileAST(ast, true)
	if err != nil {
		ce := &CompileError{Message: err.Error()}
		var se *goja.CompilerSyntaxError
		if errors.As(err, &se) {
			ce.Message = se.Message
			if se.File != nil {
				pos := se.File.Position(se.Offset)
				ce.Line, ce.Column = sourcePosition(pos.Line, pos.Column)
			}
		}
		return nil, compileError(ce.clamp(source))
	}
	p := &Program{lim: lim.WithDefaults(), prog: gp, idle: make(chan *vm, max(2, runtime.GOMAXPROCS(0)))}
	// A trial runtime: it runs the top level once (under the limits) and
	// finds whether there is a transform; it then starts the pool.
	v, err := p.newVM()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread() // the time limit reads this thread's CPU clock
	err = v.checkTransform()
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	p.put(v)
	return p, nil
}

// Limits returns the Program's limits, defaults filled in.
func (p *Program) Limits() Limits { return p.lim }

func (p *Program) get() (*vm, error) {
	select {
	case v := <-p.idle:
		return v, nil
	default:
		return p.newVM()
	}
}

func (p *Program) put(v *vm) {
	select {
	case p.idle <- v:
	default: // enough idle ones
	}
}

// compileError returns the *hookrelay.Error (EINVALID) of ce.
func compileError(ce *CompileError) error {
	return hookrelay.WrapError(hookrelay.EINVALID, "adapter does not compile: "+ce.Error(), ce)
}

// parseError turns the parser's error list into a CompileError at its
// first error.
func parseError(err error) *CompileError {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		line, col := sourcePosition(list[0].Position.Line, list[0].Position.Column)
		return &CompileError{Message: list[0].Message, Line: line, Column: col}
	}
	var one *parser.Error
	if errors.As(err, &one) {
		line, col := sourcePosition(one.Position.Line, one.Position.Column)
		return &CompileError{Message: one.Message, Line: line, Column: col}
	}
	return &CompileError{Message: err.Error()}
}

// clamp moves a position past the source's end (in the suffix the source
// is wrapped in: an unclosed block, say) to its end.
func (e *CompileError) clamp(source string) *CompileError {
	lines := strings.Split(source, "\n")
	if e.Line > len(lines) {
		e.Line = len(lines)
		e.Column = utf8.RuneCountInString(lines[len(lines)-1]) + 1
	}
	return e
}

// sourcePosition maps a position in the wrapped source to the author's:
// the same line, the column shifted back by the prefix on the first line.
func sourcePosition(line, col int) (int, int) {
	if line == 1 {
		col -= len(sourcePrefix)
		if col < 1 {
			col = 1
		}
	}
	return line, col
}
