package adapter

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// The JSON writer of an event's data. goja's JSON.stringify looks for a
// cycle by comparing each object with every object above it, so data
// nested 200,000 deep (a loop builds it in milliseconds) took minutes in
// one uninterruptible call. This writer follows JSON.stringify's rules
// (toJSON, undefined and functions left out of objects and null in
// arrays, non-finite numbers as null, boxed primitives unboxed) within a
// nesting bound (which also stops cycles) and the output bound.

// maxDataDepth bounds the nesting of an event's data.
const maxDataDepth = 64

type dataWriter struct {
	vm  *vm
	buf []byte
	max int
	err error // the first error; writing stops at it
}

// writeData writes obj, the event's data object, as JSON.
func (v *vm) writeData(obj *goja.Object) ([]byte, error) {
	w := &dataWriter{vm: v, max: v.p.lim.MaxOutputBytes}
	w.value(obj, "", 0)
	if w.over() {
		return nil, w.err
	}
	return w.buf, nil
}

func (w *dataWriter) over() bool {
	if w.err == nil && len(w.buf) > w.max {
		w.err = limitError(LimitOutput, "the event's data is over %d bytes of JSON", w.max)
	}
	return w.err != nil
}

// value writes val (a member named key) and reports whether it wrote
// anything: undefined, functions and symbols are not written.
func (w *dataWriter) value(val goja.Value, key string, depth int) bool {
	if w.over() {
		return true
	}
	if obj, ok := val.(*goja.Object); ok {
		if toJSON, ok := goja.AssertFunction(obj.Get("toJSON")); ok {
			res, err := toJSON(obj, w.vm.rt.ToValue(key))
			if err != nil {
				panic(err) // the call's recover makes it the adapter's error or a stop
			}
			val = res
		}
	}
	if val == nil || goja.IsUndefined(val) {
		return false
	}
	if goja.IsNull(val) {
		w.buf = append(w.buf, "null"...)
		return true
	}
	obj, ok := val.(*goja.Object)
	if !ok {
		return w.primitive(val)
	}
	switch obj.ClassName() {
	case "Function":
		return false
	case "String":
		w.buf = appendQuoted(w.buf, obj.String())
		return true
	case "Number":
		return w.primitive(obj.ToNumber())
	case "Boolean":
		return w.primitive(w.vm.rt.ToValue(obj.Export()))
	}
	if depth >= maxDataDepth {
		w.err = resultError("the event's data is nested deeper than %d levels (or refers to itself)", maxDataDepth)
		return true
	}
	if obj.ClassName() == "Array" {
		w.array(obj, depth+1)
	} else {
		w.object(obj, depth+1)
	}
	return true
}

func (w *dataWriter) array(obj *goja.Object, depth int) {
	n := obj.Get("length").ToInteger()
	w.buf = append(w.buf, '[')
	for i := int64(0); i < n && w.err == nil; i++ {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if !w.value(obj.Get(strconv.FormatInt(i, 10)), strconv.FormatInt(i, 10), depth) {
			w.buf = append(w.buf, "null"...)
		}
	}
	w.buf = append(w.buf, ']')
}

func (w *dataWriter) object(obj *goja.Object, depth int) {
	w.buf = append(w.buf, '{')
	first := true
	for _, k := range obj.Keys() {
		if w.err != nil {
			return
		}
		mark := len(w.buf)
		if !first {
			w.buf = append(w.buf, ',')
		}
		w.buf = appendQuoted(w.buf, k)
		w.buf = append(w.buf, ':')
		if w.value(obj.Get(k), k, depth) {
			first = false
		} else {
			w.buf = w.buf[:mark] // undefined, a function: left out
		}
	}
	w.buf = append(w.buf, '}')
}

func (w *dataWriter) primitive(val goja.Value) bool {
	switch x := val.Export().(type) {
	case string:
		w.buf = appendQuoted(w.buf, x)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case int64:
		w.buf = strconv.AppendInt(w.buf, x, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			w.buf = append(w.buf, "null"...)
		} else {
			w.buf = append(w.buf, val.String()...) // JavaScript's number format
		}
	case nil:
		w.buf = append(w.buf, "null"...)
	default:
		return false // a symbol, a BigInt (JSON.stringify throws on it)
	}
	return true
}

// appendQuoted appends s as a JSON string, as JSON.stringify writes it
// (only ", \ and control characters escaped).
func appendQuoted(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			buf = utf8.AppendRune(buf, r)
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '\r':
			buf = append(buf, '\\', 'r')
		case c == '\t':
			buf = append(buf, '\\', 't')
		case c == '\b':
			buf = append(buf, '\\', 'b')
		case c == '\f':
			buf = append(buf, '\\', 'f')
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			buf = append(buf, c)
		}
		i++
	}
	return append(buf, '"')
}
