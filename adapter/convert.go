package adapter

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dop251/goja"

	"github.com/hookrelay/hookrelay"
)

// callback builds the transform's argument from in; its error is a body
// nested deeper than MaxInputDepth.
func (v *vm) callback(in Input) (goja.Value, error) {
	rt := v.rt
	cb := rt.NewObject()
	raw := rt.ToValue(string(in.Body))
	body := raw
	if looksJSON(in.Body) {
		parsed, err := parseJSON(rt, in.Body, v.p.lim.MaxInputDepth, v.keys)
		switch {
		case err == nil:
			body = parsed
		case err != errNotJSON:
			return nil, err
		}
	}
	headers := rt.NewObject()
	names := make([]string, 0, len(in.Headers))
	joined := make(map[string]string, len(in.Headers))
	for name, values := range in.Headers {
		lower := strings.ToLower(name)
		if _, ok := joined[lower]; !ok {
			names = append(names, lower)
		} else {
			values = append([]string{joined[lower]}, values...)
		}
		joined[lower] = strings.Join(values, ", ")
	}
	slices.Sort(names) // the same key order on every call
	for _, n := range names {
		_ = headers.Set(n, joined[n])
	}
	receivedAt := ""
	if !in.ReceivedAt.IsZero() {
		receivedAt = in.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	_ = cb.Set("body", body)
	_ = cb.Set("raw", raw)
	_ = cb.Set("headers", headers)
	_ = cb.Set("carrier", in.Carrier)
	_ = cb.Set("received_at", receivedAt)
	return cb, nil
}

// looksJSON reports whether body is meant as a JSON object or array (its
// first byte other than white space is { or [); callback.body is then its
// parsed value, when it parses.
func looksJSON(body []byte) bool {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}

// eventFields are the fields an event object may have.
var eventFields = []string{"type", "ordering_key", "merchant", "occurred_at", "data"}

// event converts what transform returned: null drops the callback, an
// object is the event.
func (v *vm) event(res goja.Value) (Event, bool, error) {
	if res == nil || goja.IsUndefined(res) {
		return Event{}, false, resultError("transform returned undefined (return null to drop the callback)")
	}
	if goja.IsNull(res) {
		return Event{}, true, nil
	}
	obj, ok := res.(*goja.Object)
	if !ok || obj.ClassName() != "Object" {
		return Event{}, false, resultError("transform returned %s, not an event object or null", describe(res))
	}
	for _, k := range obj.Keys() {
		if !slices.Contains(eventFields, k) {
			return Event{}, false, resultError("the event has an unknown field %q (its fields: %s)", k, strings.Join(eventFields, ", "))
		}
	}
	var ev Event
	var err error
	if ev.Type, err = stringField(obj, "type", MaxTypeLength); err != nil {
		return Event{}, false, err
	}
	if ev.Type == "" {
		return Event{}, false, resultError("the event has no type")
	}
	if ev.OrderingKey, err = stringField(obj, "ordering_key", MaxOrderingKeyLength); err != nil {
		return Event{}, false, err
	}
	if err := hookrelay.CheckOrderingKey("ordering_key", ev.OrderingKey, MaxOrderingKeyLength); err != nil {
		return Event{}, false, resultError("the event's %s", hookrelay.ErrorMessage(err))
	}
	if ev.Merchant, err = stringField(obj, "merchant", MaxMerchantLength); err != nil {
		return Event{}, false, err
	}
	if ev.OccurredAt, err = timeField(obj, "occurred_at"); err != nil {
		return Event{}, false, err
	}
	if ev.Data, err = v.data(obj.Get("data")); err != nil {
		return Event{}, false, err
	}
	return ev, false, nil
}

// stringField reads an optional string field (undefined and null are "").
func stringField(obj *goja.Object, name string, max int) (string, error) {
	val := obj.Get(name)
	if val == nil || goja.IsUndefined(val) || goja.IsNull(val) {
		return "", nil
	}
	var s string
	ok := false
	if _, isObj := val.(*goja.Object); !isObj { // exporting an object would read all of it
		s, ok = val.Export().(string)
	}
	if !ok {
		return "", resultError("the event's %s is %s, not a string", name, describe(val))
	}
	if err := hookrelay.CheckText(name, s, max); err != nil {
		return "", resultError("the event's %s", hookrelay.ErrorMessage(err))
	}
	return s, nil
}

// timeField reads an optional time: an RFC 3339 string or a Date.
func timeField(obj *goja.Object, name string) (time.Time, error) {
	val := obj.Get(name)
	if val == nil || goja.IsUndefined(val) || goja.IsNull(val) {
		return time.Time{}, nil
	}
	if o, ok := val.(*goja.Object); ok && o.ClassName() == "Date" {
		if t, ok := o.Export().(time.Time); ok && !t.IsZero() {
			return t.UTC(), nil
		}
		return time.Time{}, resultError("the event's %s is an invalid Date", name)
	}
	if _, isObj := val.(*goja.Object); isObj {
		return time.Time{}, resultError("the event's %s is %s, not an RFC 3339 string or a Date", name, describe(val))
	}
	switch x := val.Export().(type) {
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return time.Time{}, resultError("the event's %s %q is not an RFC 3339 time with an offset (hookrelay.localTime converts local times)", name, cut(x, 64))
		}
		return t, nil
	}
	return time.Time{}, resultError("the event's %s is %s, not an RFC 3339 string or a Date", name, describe(val))
}

// data converts the event's data object to JSON within MaxOutputBytes.
func (v *vm) data(val goja.Value) ([]byte, error) {
	if val == nil || goja.IsUndefined(val) || goja.IsNull(val) {
		return nil, resultError("the event has no data object")
	}
	obj, ok := val.(*goja.Object)
	if !ok || obj.ClassName() != "Object" {
		return nil, resultError("the event's data is %s, not an object", describe(val))
	}
	return v.writeData(obj)
}

// describe names a value's kind for an error message.
func describe(val goja.Value) string {
	switch {
	case val == nil || goja.IsUndefined(val):
		return "undefined"
	case goja.IsNull(val):
		return "null"
	}
	if obj, ok := val.(*goja.Object); ok {
		switch obj.ClassName() {
		case "Array":
			return "an array"
		case "Function":
			return "a function"
		default:
			return "a " + obj.ClassName()
		}
	}
	switch val.Export().(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", val.Export())
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
