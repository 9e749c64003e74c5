package ingest

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/hookrelay/hookrelay/filter"
)

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// errBadJSON is the parser's only error; the handler answers 400.
var errBadJSON = errors.New("invalid JSON")

// Field is a value found at a dot path: its text (strings unescaped, numbers
// as written) and whether it was present as a string or number.
type Field struct {
	Value string
	Found bool
}

// ParseCallback checks that body is one valid JSON object and returns the
// string or number values at the given dot paths ("a.b.c": key b of object a,
// and so on). A path whose value is absent, null, a boolean, an object or an
// array is not Found. A repeated key counts by its last value, like
// encoding/json. It reads body once, allocates only for the values found, and
// never re-encodes anything.
func ParseCallback(body []byte, paths ...string) ([]Field, error) {
	f, _, err := parseCallback(body, paths, false)
	return f, err
}

// ParseCallbackValues is ParseCallback that also returns, for content
// filters, the value at each path with its JSON kind (strings and numbers
// as in Field, booleans as "true" or "false"; objects, arrays and null by
// kind only).
func ParseCallbackValues(body []byte, paths ...string) ([]Field, []filter.Value, error) {
	return parseCallback(body, paths, true)
}

func parseCallback(body []byte, paths []string, values bool) ([]Field, []filter.Value, error) {
	p := parser{data: body}
	if values {
		p.vals = make([]filter.Value, len(paths))
	}
	p.paths = make([][]string, len(paths))
	for i, path := range paths {
		if path != "" {
			p.paths[i] = strings.Split(path, ".")
		}
	}
	p.out = make([]Field, len(paths))
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		return nil, nil, errBadJSON
	}
	active := make([]int, 0, len(paths))
	for i, segs := range p.paths {
		if len(segs) > 0 {
			active = append(active, i)
		}
	}
	if err := p.object(active, 0); err != nil {
		return nil, nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, nil, errBadJSON
	}
	return p.out, p.vals, nil
}

type parser struct {
	data  []byte
	pos   int
	depth int
	paths [][]string
	out   []Field
	// vals, when not nil, gets the value and kind at each path (see
	// ParseCallbackValues).
	vals []filter.Value
}

// setVal records the value of kind k (text for strings, numbers and
// booleans) at the captured paths, when values are wanted.
func (p *parser) setVal(capture []int, k filter.Kind, text string) {
	if p.vals == nil {
		return
	}
	for _, i := range capture {
		p.vals[i] = filter.Value{Kind: k, Text: text}
	}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses any JSON value. active lists the paths whose first level
// segments match the current position; capture lists those ending here.
func (p *parser) value(active []int, level int, capture []int) error {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return errBadJSON
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		p.clear(capture)
		p.setVal(capture, filter.Object, "")
		return p.object(active, level)
	case c == '[':
		p.clear(capture)
		p.setVal(capture, filter.Array, "")
		return p.array()
	case c == '"':
		s, err := p.str(len(capture) > 0)
		if err != nil {
			return err
		}
		for _, i := range capture {
			p.out[i] = Field{Value: s, Found: true}
		}
		p.setVal(capture, filter.String, s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.pos
		if err := p.number(); err != nil {
			return err
		}
		if len(capture) > 0 {
			s := string(p.data[start:p.pos])
			for _, i := range capture {
				p.out[i] = Field{Value: s, Found: true}
			}
			p.setVal(capture, filter.Number, s)
		}
		return nil
	default:
		p.clear(capture)
		for _, lit := range []string{"true", "false", "null"} {
			if len(p.data)-p.pos >= len(lit) && string(p.data[p.pos:p.pos+len(lit)]) == lit {
				p.pos += len(lit)
				if lit == "null" {
					p.setVal(capture, filter.Null, "")
				} else {
					p.setVal(capture, filter.Bool, lit)
				}
				return nil
			}
		}
		return errBadJSON
	}
}

func (p *parser) clear(capture []int) {
	for _, i := range capture {
		p.out[i] = Field{}
		if p.vals != nil {
			p.vals[i] = filter.Value{}
		}
	}
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return errBadJSON
	}
	return nil
}

// object parses an object at p.pos ('{'); active paths match up to level.
func (p *parser) object(active []int, level int) error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return nil
	}
	var nextBuf, capBuf [4]int
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return errBadJSON
		}
		var next, capture []int
		if len(active) == 0 {
			if _, err := p.str(false); err != nil {
				return err
			}
		} else {
			raw, escaped, err := p.rawStr()
			if err != nil {
				return err
			}
			var key string
			if escaped {
				if key, err = unescape(raw); err != nil {
					return err
				}
			}
			next, capture = nextBuf[:0], capBuf[:0]
			for _, i := range active {
				segs := p.paths[i]
				if escaped && segs[level] != key || !escaped && segs[level] != string(raw) {
					continue
				}
				if len(segs) == level+1 {
					capture = append(capture, i)
				} else {
					next = append(next, i)
				}
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return errBadJSON
		}
		p.pos++
		var err error
		// A repeated key replaces the earlier value (as in a map): paths
		// below it start over.
		p.clear(next)
		if len(next) > 0 && p.peekObject() {
			err = p.value(next, level+1, capture)
		} else {
			err = p.value(nil, 0, capture)
		}
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return errBadJSON
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			return nil
		default:
			return errBadJSON
		}
	}
}

// peekObject reports whether the next value is an object.
func (p *parser) peekObject() bool {
	p.skipSpace()
	return p.pos < len(p.data) && p.data[p.pos] == '{'
}

func (p *parser) array() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // [
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		if err := p.value(nil, 0, nil); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return errBadJSON
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return nil
		default:
			return errBadJSON
		}
	}
}

// str parses a string at p.pos ('"'); with want it returns the unescaped text.
func (p *parser) str(want bool) (string, error) {
	raw, escaped, err := p.rawStr()
	if err != nil || !want {
		return "", err
	}
	if !escaped {
		return string(raw), nil
	}
	return unescape(raw)
}

// unescape decodes a string's raw bytes (between the quotes, escapes
// already validated).
func unescape(raw []byte) (string, error) {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", errBadJSON
	}
	return s, nil
}

// rawStr parses a string at p.pos ('"'), validating escapes and UTF-8, and
// returns the bytes between the quotes and whether they hold escapes.
func (p *parser) rawStr() ([]byte, bool, error) {
	start := p.pos + 1
	escaped := false
	i := start
	for {
		if i >= len(p.data) {
			return nil, false, errBadJSON
		}
		c := p.data[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return p.data[start:i], escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(p.data) {
				return nil, false, errBadJSON
			}
			switch p.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p.data) {
					return nil, false, errBadJSON
				}
				for _, h := range p.data[i+2 : i+6] {
					if !isHex(h) {
						return nil, false, errBadJSON
					}
				}
				i += 6
			default:
				return nil, false, errBadJSON
			}
		case c < 0x20:
			return nil, false, errBadJSON
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, errBadJSON
			}
			i += size
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number parses a JSON number at p.pos.
func (p *parser) number() error {
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return errBadJSON
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return errBadJSON
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return errBadJSON
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	p.pos = i
	return nil
}
