package adapter

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// The JSON parser of callback bodies. goja's JSON.parse goes through
// encoding/json's token stream and took 57 % of a call on a 1.2 KB body;
// this one builds the runtime's values directly, with the same result as
// JSON.parse (TestParseJSONMatchesJSONParse, FuzzParseJSON): numbers are
// doubles, object keys keep their order, a repeated key keeps its last
// value, "__proto__" is an own property. It also bounds the nesting, which
// the recursive parsers (both) need.

// errNotJSON is a body that is not valid JSON; callback.body is then the
// raw text.
var errNotJSON = errors.New("not JSON")

type jsonParser struct {
	rt       *goja.Runtime
	s        []byte
	i        int
	depth    int
	maxDepth int
	tooDeep  bool
	buf      []byte            // scratch for strings with escapes
	keys     map[string]string // object keys seen before (the runtime's own: a carrier's keys repeat)
}

// maxInternedKeys bounds a runtime's map of object keys.
const maxInternedKeys = 512

// parseJSON parses body into a value of rt. It returns errNotJSON for a
// body that is not JSON and a LimitInput error for one nested deeper than
// maxDepth.
func parseJSON(rt *goja.Runtime, body []byte, maxDepth int, keys map[string]string) (goja.Value, error) {
	p := &jsonParser{rt: rt, s: body, maxDepth: maxDepth, keys: keys}
	p.space()
	v, ok := p.value()
	if ok {
		p.space()
		ok = p.i == len(p.s)
	}
	switch {
	case p.tooDeep:
		return nil, limitError(LimitInput, "body nested deeper than %d levels", maxDepth)
	case !ok:
		return nil, errNotJSON
	}
	return v, nil
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (goja.Value, bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, ok := p.string()
		if !ok {
			return nil, false
		}
		return p.rt.ToValue(s), true
	case c == 't':
		return p.literal("true", p.rt.ToValue(true))
	case c == 'f':
		return p.literal("false", p.rt.ToValue(false))
	case c == 'n':
		return p.literal("null", goja.Null())
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *jsonParser) literal(word string, v goja.Value) (goja.Value, bool) {
	if len(p.s)-p.i < len(word) || string(p.s[p.i:p.i+len(word)]) != word {
		return nil, false
	}
	p.i += len(word)
	return v, true
}

func (p *jsonParser) enter() bool {
	p.depth++
	if p.depth > p.maxDepth {
		p.tooDeep = true
		return false
	}
	return true
}

func (p *jsonParser) object() (goja.Value, bool) {
	if !p.enter() {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // {
	obj := p.rt.NewObject()
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return obj, true
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		if key == "__proto__" {
			// An own property, as JSON.parse makes it (Set would call
			// the prototype's setter).
			if err := obj.DefineDataProperty(key, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
				return nil, false
			}
		} else if err := obj.Set(key, v); err != nil {
			return nil, false
		}
		p.space()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, true
		default:
			return nil, false
		}
	}
}

func (p *jsonParser) array() (goja.Value, bool) {
	if !p.enter() {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // [
	var items []any
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return p.rt.NewArray(), true
	}
	for {
		p.space()
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		items = append(items, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return p.rt.NewArray(items...), true
		default:
			return nil, false
		}
	}
}

// key reads an object's key: a string, the same string as last time for a
// key without escapes seen before.
func (p *jsonParser) key() (string, bool) {
	start := p.i + 1
	for i := start; i < len(p.s); i++ {
		c := p.s[i]
		if c == '"' {
			raw := p.s[start:i]
			if k, ok := p.keys[string(raw)]; ok {
				p.i = i + 1
				return k, true
			}
			break
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	k, ok := p.string()
	if ok && p.keys != nil && len(p.keys) < maxInternedKeys && len(k) <= 32 {
		p.keys[k] = k
	}
	return k, ok
}

// string reads a JSON string at p.i (its opening quote).
func (p *jsonParser) string() (string, bool) {
	p.i++ // "
	start := p.i
	// The common case: no escapes, valid UTF-8.
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			s := p.s[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return string([]rune(string(s))), true // invalid bytes become U+FFFD, as in the raw text
			}
			return string(s), true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", false
		}
		p.i++
	}
	buf := append(p.buf[:0], p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			p.buf = buf
			if !utf8.Valid(buf) {
				return string([]rune(string(buf))), true
			}
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++ // backslash
		if p.i >= len(p.s) {
			return "", false
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				// A pair makes one character; a lone half stays as it is
				// in JavaScript, written here as U+FFFD (Go strings are
				// UTF-8).
				if p.i+6 <= len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					if r2, ok := p.hex4(); ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
						r = utf16.DecodeRune(r, r2)
					} else {
						p.i = save
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", false
		}
	}
	return "", false
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
}

// number reads a JSON number: a double, as in JavaScript.
func (p *jsonParser) number() (goja.Value, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.i < len(p.s) && p.s[p.i] >= '1' && p.s[p.i] <= '9':
		p.digits()
	default:
		return nil, false
	}
	integer := true
	if p.i < len(p.s) && p.s[p.i] == '.' {
		integer = false
		p.i++
		if p.digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		integer = false
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, false
		}
	}
	text := string(p.s[start:p.i])
	if integer && len(text) < 16 && text != "-0" {
		n, err := strconv.ParseInt(text, 10, 64)
		if err == nil {
			return p.rt.ToValue(n), true
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return nil, false
	}
	return p.rt.ToValue(f), true
}

func (p *jsonParser) digits() int {
	n := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}
