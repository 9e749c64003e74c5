package eventtype

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxDepth bounds the nesting of the data decode reads.
const maxDepth = 1000

// decode reads one JSON value from data into the types the validator
// takes: map[string]any, []any, string, json.Number, bool and nil — what
// encoding/json gives with UseNumber, without its reflection and second
// scan (the event's data is decoded on every validation). Strings with
// escapes or non-ASCII bytes that are not valid UTF-8 go through
// encoding/json, so every string decodes as it would there.
func decode(data []byte) (any, error) {
	d := decoder{data: data}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i < len(d.data) {
		return nil, d.errorf("data after the JSON value")
	}
	return v, nil
}

type decoder struct {
	data []byte
	i    int
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", d.i, fmt.Sprintf(format, args...))
}

var errEnd = errors.New("unexpected end of JSON")

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.errorf("nested deeper than %d", maxDepth)
	}
	d.space()
	if d.i >= len(d.data) {
		return nil, errEnd
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	default:
		return nil, d.errorf("invalid character %q", c)
	}
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.i < len(word) || string(d.data[d.i:d.i+len(word)]) != word {
		return d.errorf("invalid literal, want %s", word)
	}
	d.i += len(word)
	return nil
}

func (d *decoder) object(depth int) (any, error) {
	d.i++ // {
	m := make(map[string]any, 8)
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		d.space()
		if d.i >= len(d.data) {
			return nil, errEnd
		}
		if d.data[d.i] != '"' {
			return nil, d.errorf("want a string key")
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.data) {
			return nil, errEnd
		}
		if d.data[d.i] != ':' {
			return nil, d.errorf("want ':' after an object key")
		}
		d.i++
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.i >= len(d.data) {
			return nil, errEnd
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, nil
		default:
			return nil, d.errorf("want ',' or '}' in an object")
		}
	}
}

func (d *decoder) array(depth int) (any, error) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return a, nil
	}
	for {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.data) {
			return nil, errEnd
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, nil
		default:
			return nil, d.errorf("want ',' or ']' in an array")
		}
	}
}

// str reads a string at d.i (its opening quote).
func (d *decoder) str() (string, error) {
	start := d.i
	d.i++
	plain := true // no escape, valid UTF-8 as far as checked
	ascii := true
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			d.i++
			if plain && (ascii || utf8.Valid(d.data[start+1:d.i-1])) {
				return string(d.data[start+1 : d.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(d.data[start:d.i], &s); err != nil {
				return "", fmt.Errorf("at byte %d: %w", start, err)
			}
			return s, nil
		case c == '\\':
			plain = false
			d.i += 2 // the escaped byte (\uXXXX: encoding/json checks the rest)
		case c < 0x20:
			return "", d.errorf("control character in a string")
		default:
			if c >= 0x80 {
				ascii = false
			}
			d.i++
		}
	}
	return "", errEnd
}

// number reads a number by JSON's grammar as a json.Number.
func (d *decoder) number() (any, error) {
	start := d.i
	if d.data[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.i < len(d.data) && d.data[d.i] == '0' {
		d.i++
	} else if digits() == 0 {
		return nil, d.errorf("invalid number")
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, d.errorf("invalid number")
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.errorf("invalid number")
		}
	}
	return json.Number(d.data[start:d.i]), nil
}
