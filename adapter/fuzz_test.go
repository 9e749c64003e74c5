package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/adapter"
)

// fuzzAdapter echoes what it saw of the callback, so that the fuzz target
// can hold the body's parse to encoding/json's.
const fuzzAdapter = `function transform(c) {
	const b = c.body;
	if (typeof b === "string") {
		if (b !== c.raw) { throw new Error("text body is not the raw body"); }
		return b.length % 5 === 0 ? null : {type: "text", data: {n: b.length, headers: c.headers}};
	}
	const key = b !== null && typeof b === "object" && !Array.isArray(b) ? b.k : undefined;
	return {type: "json", ordering_key: typeof key === "string" ? key : undefined, data: {body: b, headers: c.headers}};
}`

// FuzzRun: random bodies and headers through a fixed adapter never panic
// the engine (an engine panic would surface as EINTERNAL), every error is
// classified (a limit or the adapter's own), and a JSON body reaches the
// adapter as encoding/json reads it.
func FuzzRun(f *testing.F) {
	for _, s := range []struct{ body, name, value string }{
		{`{"k": "SF1", "route": {"op_code": 50, "op_time": "2026-12-04 08:15:00"}}`, "Content-Type", "application/json"},
		{`[1, -0, 1e400, 2.5e-3, "\ud83d\ude00", "\ud800", {"__proto__": {"x": 1}}]`, "X-Sign", "abc"},
		{`{"a": 1, "a": 2, "10": 0, "2": 1}`, "x-dup", "1"},
		{`logistics_interface=%7B%22a%22%3A1%7D&data_digest=abc`, "Content-Type", "application/x-www-form-urlencoded"},
		{`{"k": "\u0001reserved"}`, "", ""},
		{"[[[[[[[[[[[[]]]]]]]]]]]]", "A", "\xff"},
		{"{\"bad\": \"\xff\"}", "B", "x"},
	} {
		f.Add([]byte(s.body), s.name, s.value)
	}
	p, err := adapter.Compile(fuzzAdapter, adapter.Limits{CPUTime: time.Second, MaxInputDepth: 64})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, name, value string) {
		in := adapter.Input{Body: body, Headers: http.Header{name: {value}}, Carrier: "fuzz", ReceivedAt: receivedAt}
		ev, drop, err := p.Run(context.Background(), in)
		if err != nil {
			var le *adapter.LimitError
			var se *adapter.ScriptError
			if hookrelay.CodeOf(err) != hookrelay.EINVALID || !errors.As(err, &le) && !errors.As(err, &se) {
				t.Fatalf("unclassified error %T: %v", err, err)
			}
			if le != nil && le.Limit != adapter.LimitInput {
				t.Fatalf("limit %v on a small body: %v", le.Limit, err)
			}
			return
		}
		if !drop && !json.Valid(ev.Data) {
			t.Fatalf("event data is not JSON: %q", ev.Data)
		}
		if drop || ev.Type != "json" {
			return
		}
		if !utf8.Valid(body) {
			return // invalid bytes become U+FFFD in the engine's strings; encoding/json keeps them
		}
		var want, got struct {
			Body any `json:"body"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&want.Body); err != nil {
			t.Fatalf("the adapter saw JSON in %q, encoding/json did not: %v", body, err)
		}
		if err := json.Unmarshal(ev.Data, &got); err != nil {
			t.Fatalf("event data %q: %v", ev.Data, err)
		}
		if !reflect.DeepEqual(normalize(want.Body), got.Body) {
			t.Fatalf("body %q: the adapter saw %#v, encoding/json reads %#v", body, got.Body, want.Body)
		}
	})
}

// normalize turns encoding/json's reading of a body into what a round trip
// through JavaScript gives: numbers are doubles, and one out of range is
// Infinity, which JSON.stringify writes as null.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		if math.IsInf(f, 0) {
			return nil
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}
