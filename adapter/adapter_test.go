package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/adapter"
)

var receivedAt = time.Date(2026, 12, 4, 0, 15, 2, 500_000_000, time.UTC)

func compile(t *testing.T, src string, lim adapter.Limits) *adapter.Program {
	t.Helper()
	p, err := adapter.Compile(src, lim)
	require.NoError(t, err)
	return p
}

func input(body string) adapter.Input {
	return adapter.Input{
		Body:       []byte(body),
		Headers:    http.Header{"Content-Type": {"application/json"}, "X-Trace": {"a", "b"}},
		Carrier:    "sfx",
		ReceivedAt: receivedAt,
	}
}

// echo is an adapter whose event's data is what the adapter saw.
const echo = `function transform(callback) {
	return {type: "seen", data: {body: callback.body, raw: callback.raw, headers: callback.headers,
		carrier: callback.carrier, received_at: callback.received_at}};
}`

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src  string
		line, col  int
		message    string
		limit      adapter.Limit
		scriptLine int
	}{
		{name: "syntax error", src: "function transform(c) {\n  return {\n    type: 'x' 'y',\n  };\n}", line: 3, col: 15, message: "Unexpected string"},
		{name: "first line", src: "function transform(c) { return ) }", line: 1, col: 32, message: "Unexpected token"},
		{name: "unclosed block", src: "function transform(c) {\n  return null;\n", line: 3, col: 1, message: "Unexpected"},
		{name: "no transform", src: "function transfrom(c) { return null; }", message: "no function transform"},
		{name: "transform not a function", src: "const transform = 3;", message: "no function transform"},
		{name: "strict mode", src: "function transform(c) { with (c) { return null; } }", line: 1, message: "Strict mode"},
		{name: "top level throws", src: "\nthrow new Error('boom');\nfunction transform(c) { return null; }", message: "Error: boom", scriptLine: 2},
		{name: "top level loops", src: "for (;;) {}\nfunction transform(c) { return null; }", limit: adapter.LimitTime},
		{name: "top level throws a looping toString", src: "throw {toString() { for (;;) {} }};\nfunction transform(c) { return null; }", limit: adapter.LimitTime},
		{name: "top level recurses", src: "const f = () => f();\nf();\nfunction transform(c) { return null; }", limit: adapter.LimitStack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := adapter.Compile(tc.src, adapter.Limits{CPUTime: 50 * time.Millisecond})
			require.Error(t, err)
			require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
			switch {
			case tc.limit != "":
				var le *adapter.LimitError
				require.ErrorAs(t, err, &le)
				require.Equal(t, tc.limit, le.Limit)
			case tc.scriptLine != 0:
				var se *adapter.ScriptError
				require.ErrorAs(t, err, &se)
				require.Equal(t, tc.scriptLine, se.Line)
				require.Contains(t, se.Message, tc.message)
			default:
				var ce *adapter.CompileError
				require.ErrorAs(t, err, &ce)
				require.Contains(t, ce.Message, tc.message)
				require.Equal(t, tc.line, ce.Line, ce.Error())
				if tc.col != 0 {
					require.Equal(t, tc.col, ce.Column, ce.Error())
				}
				if tc.line != 0 {
					require.Contains(t, hookrelay.ErrorMessage(err), "line ")
				}
			}
		})
	}
}

func TestCallbackArgument(t *testing.T) {
	t.Parallel()
	p := compile(t, echo, adapter.Limits{})
	for _, tc := range []struct {
		name, body string
		want       string // the data's body, as JSON
	}{
		{name: "json object", body: `{"a": [1, 2.5, "x", true, null], "b": {"c": "深圳"}}`, want: `{"a":[1,2.5,"x",true,null],"b":{"c":"深圳"}}`},
		{name: "json array", body: ` [1, {"k": "v"}]`, want: `[1,{"k":"v"}]`},
		{name: "form body", body: `a=1&b=2`, want: `"a=1&b=2"`},
		{name: "broken json", body: `{"a": `, want: `"{\"a\": "`},
		{name: "json string is text", body: `"quoted"`, want: `"\"quoted\""`},
		{name: "empty", body: ``, want: `""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, drop, err := p.Run(context.Background(), input(tc.body))
			require.NoError(t, err)
			require.False(t, drop)
			var data struct {
				Body       json.RawMessage   `json:"body"`
				Raw        string            `json:"raw"`
				Headers    map[string]string `json:"headers"`
				Carrier    string            `json:"carrier"`
				ReceivedAt string            `json:"received_at"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &data))
			require.JSONEq(t, tc.want, string(data.Body))
			require.Equal(t, tc.body, data.Raw)
			require.Equal(t, map[string]string{"content-type": "application/json", "x-trace": "a, b"}, data.Headers)
			require.Equal(t, "sfx", data.Carrier)
			require.Equal(t, "2026-12-04T00:15:02.5Z", data.ReceivedAt)
		})
	}
}

func TestEventResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ret string // the expression transform returns
		want      adapter.Event
		drop      bool
		err       string
	}{
		{name: "full event", ret: `{type: "tracking.updated", ordering_key: "SF1", merchant: "m1", occurred_at: "2026-12-04T08:15:00+08:00", data: {a: 1}}`,
			want: adapter.Event{Type: "tracking.updated", OrderingKey: "SF1", Merchant: "m1",
				OccurredAt: time.Date(2026, 12, 4, 0, 15, 0, 0, time.UTC), Data: json.RawMessage(`{"a":1}`)}},
		{name: "optional fields absent", ret: `{type: "t", data: {}}`, want: adapter.Event{Type: "t", Data: json.RawMessage(`{}`)}},
		{name: "optional fields null", ret: `{type: "t", ordering_key: null, merchant: undefined, occurred_at: null, data: {}}`, want: adapter.Event{Type: "t", Data: json.RawMessage(`{}`)}},
		{name: "occurred_at as a Date", ret: `{type: "t", occurred_at: new Date(Date.UTC(2026, 11, 4)), data: {}}`,
			want: adapter.Event{Type: "t", OccurredAt: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC), Data: json.RawMessage(`{}`)}},
		{name: "null drops", ret: `null`, drop: true},
		{name: "undefined", ret: `undefined`, err: "returned undefined (return null to drop"},
		{name: "an array", ret: `[]`, err: "returned an array"},
		{name: "a string", ret: `"x"`, err: "returned a string"},
		{name: "unknown field", ret: `{type: "t", orderingKey: "k", data: {}}`, err: `unknown field "orderingKey"`},
		{name: "no type", ret: `{data: {}}`, err: "has no type"},
		{name: "type not a string", ret: `{type: 3, data: {}}`, err: "type is a number, not a string"},
		{name: "type too long", ret: `{type: "t".repeat(200), data: {}}`, err: "type longer than 128 bytes"},
		{name: "no data", ret: `{type: "t"}`, err: "has no data object"},
		{name: "data an array", ret: `{type: "t", data: [1]}`, err: "data is an array, not an object"},
		{name: "ordering key reserved", ret: `{type: "t", ordering_key: "\u0001k", data: {}}`, err: "U+0001"},
		{name: "ordering key with NUL", ret: `{type: "t", ordering_key: "a\u0000b", data: {}}`, err: "NUL"},
		{name: "local time string", ret: `{type: "t", occurred_at: "2026-12-04 08:15:00", data: {}}`, err: "not an RFC 3339 time"},
		{name: "invalid date", ret: `{type: "t", occurred_at: new Date("nope"), data: {}}`, err: "invalid Date"},
		{name: "cyclic data", ret: `(() => { const d = {}; d.self = d; return {type: "t", data: d}; })()`, err: "refers to itself"},
		{name: "deep data", ret: `(() => { let d = {}; for (let i = 0; i < 2000; i++) { d = {a: d}; } return {type: "t", data: d}; })()`, err: "nested deeper than 64"},
		{name: "data by JSON.stringify rules", ret: `{type: "t", data: {u: undefined, f() {}, n: NaN, i: -Infinity, d: new Date(0), a: [undefined, () => 1, 1.5e21, 0.1],
			s: new String("x"), b: new Boolean(false), nested: {toJSON(key) { return "key " + key; }}, q: "\"\\\n\u0001é😀"}}`,
			want: adapter.Event{Type: "t", Data: json.RawMessage(`{"n":null,"i":null,"d":"1970-01-01T00:00:00.000Z","a":[null,null,1.5e+21,0.1],"s":"x","b":false,"nested":"key nested","q":"\"\\\n\u0001é😀"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, "function transform(callback) {\n  return "+tc.ret+";\n}", adapter.Limits{})
			ev, drop, err := p.Run(context.Background(), input(`{}`))
			if tc.err != "" {
				require.Error(t, err)
				require.Contains(t, hookrelay.ErrorMessage(err), tc.err)
				require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
				var se *adapter.ScriptError
				require.ErrorAs(t, err, &se)
				require.NotErrorIs(t, err, adapter.ErrLimit)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.drop, drop)
			if !tc.want.OccurredAt.IsZero() {
				require.True(t, tc.want.OccurredAt.Equal(ev.OccurredAt), ev.OccurredAt)
				ev.OccurredAt = tc.want.OccurredAt
			}
			require.Equal(t, tc.want, ev)
		})
	}
}

func TestThrownValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ throw, want string }{
		{`"plain text"`, "plain text"},
		{`42`, "42"},
		{`{toString() { return "custom"; }}`, "custom"},
		{`{toString() { throw {toString() { throw new Error("again"); }}; }}`, "an exception whose toString failed"},
		{`{toString() { for (;;) {} }}`, ""},
	} {
		p := compile(t, "function transform(c) {\n  throw "+tc.throw+";\n}", adapter.Limits{CPUTime: 50 * time.Millisecond})
		_, _, err := p.Run(context.Background(), input(`{}`))
		require.Error(t, err)
		if tc.want == "" {
			require.ErrorIs(t, err, adapter.ErrLimit, "a toString that loops is stopped")
			continue
		}
		var se *adapter.ScriptError
		require.ErrorAs(t, err, &se, err.Error())
		require.Equal(t, tc.want, se.Message)
	}
}

func TestThrownErrorNamesLine(t *testing.T) {
	t.Parallel()
	p := compile(t, "function transform(callback) {\n  const b = callback.body;\n  if (!b.waybill) {\n    throw new Error('no waybill');\n  }\n  return {type: 't', data: {n: b.waybill.no.length}};\n}", adapter.Limits{})
	_, _, err := p.Run(context.Background(), input(`{}`))
	var se *adapter.ScriptError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "Error: no waybill", se.Message)
	require.Equal(t, 4, se.Line)
	require.NotErrorIs(t, err, adapter.ErrLimit)

	_, _, err = p.Run(context.Background(), input(`{"waybill": {}}`))
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Message, "TypeError")
	require.Equal(t, 6, se.Line)

	_, _, err = p.Run(context.Background(), input(`{"waybill": {"no": "SF1"}}`))
	require.NoError(t, err)
}

// TestLimits: each runaway call ends with a limit error for that call only;
// the next call on the same Program works.
func TestLimits(t *testing.T) {
	t.Parallel()
	lim := adapter.Limits{
		CPUTime:         200 * time.Millisecond,
		MaxMemoryBytes:  1 << 30, // TestMemoryLimit
		MaxOutputBytes:  1 << 10,
		MaxStringLength: 1 << 20,
		MaxArrayLength:  1 << 12,
		MaxCallDepth:    100,
		MaxInputDepth:   20,
	}
	for _, tc := range []struct {
		name, runaway string // statements run when callback.body.runaway is true
		body          string // the runaway call's body; default {"runaway": true}
		limit         adapter.Limit
	}{
		{name: "infinite loop", runaway: `for (;;) {}`, limit: adapter.LimitTime},
		{name: "infinite loop caught", runaway: `for (;;) { try { for (;;) {} } catch (e) {} }`, limit: adapter.LimitTime},
		{name: "huge repeat", runaway: `'x'.repeat(1e9);`, limit: adapter.LimitString},
		{name: "huge repeat caught", runaway: `try { 'x'.repeat(1e9); } catch (e) {} return null;`, limit: adapter.LimitString},
		{name: "huge padStart", runaway: `'x'.padStart(1e9);`, limit: adapter.LimitString},
		{name: "huge array filled", runaway: `new Array(1e8).fill(1);`, limit: adapter.LimitArray},
		{name: "huge array by length", runaway: `const a = []; a.length = 1e8; a.fill(1);`, limit: adapter.LimitArray},
		{name: "huge array from", runaway: `Array.from({length: 1e8});`, limit: adapter.LimitArray},
		{name: "array pushed forever", runaway: `const a = []; for (;;) { a.push(1); }`, limit: adapter.LimitArray},
		{name: "backtracking regexp", runaway: `if (/^(a|a)*\1b$/.test("a".repeat(40))) { return null; } for (;;) {}`, limit: adapter.LimitTime},
		{name: "deep recursion", runaway: `const f = (n) => f(n + 1) + 1; f(0);`, limit: adapter.LimitStack},
		{name: "deep recursion caught", runaway: `const f = (n) => { try { return f(n + 1); } catch (e) { return f(n + 1); } }; f(0);`, limit: adapter.LimitStack},
		{name: "deep JSON.stringify", runaway: `let d = {}; for (let i = 0; i < 2000; i++) { d = {a: d}; } JSON.stringify(d);`, limit: adapter.LimitOutput},
		{name: "output too large", runaway: `return {type: 't', data: {s: 'x'.repeat(2000)}};`, limit: adapter.LimitOutput},
		{name: "deep body", runaway: ``, body: strings.Repeat(`[`, 50) + strings.Repeat(`]`, 50), limit: adapter.LimitInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "function transform(callback) {\n  if (callback.body.runaway) {\n" + tc.runaway +
				"\n  }\n  return {type: 'ok', data: {n: 1}};\n}"
			p := compile(t, src, lim)
			body := tc.body
			if body == "" {
				body = `{"runaway": true}`
			}
			start := time.Now()
			_, _, err := p.Run(context.Background(), input(body))
			elapsed := time.Since(start)
			require.Error(t, err)
			require.ErrorIs(t, err, adapter.ErrLimit, err.Error())
			var le *adapter.LimitError
			require.ErrorAs(t, err, &le)
			require.Equal(t, tc.limit, le.Limit, le.Error())
			require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
			// Stopped within its limit: CPUTime of CPU, or 10 × CPUTime
			// of wall-clock time on a machine too loaded to give it that
			// (and the scheduler's slack).
			require.Less(t, elapsed, 10*lim.CPUTime+3*time.Second)

			ev, drop, err := p.Run(context.Background(), input(`{"runaway": false}`))
			require.NoError(t, err)
			require.False(t, drop)
			require.Equal(t, "ok", ev.Type)
		})
	}
}

func TestContextEndsCall(t *testing.T) {
	t.Parallel()
	p := compile(t, "function transform(c) { if (c.body.loop) { for (;;) {} } return null; }", adapter.Limits{CPUTime: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := p.Run(ctx, input(`{"loop": true}`))
	require.Error(t, err)
	require.Equal(t, hookrelay.ETIMEOUT, hookrelay.CodeOf(err))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, adapter.ErrLimit)

	_, drop, err := p.Run(context.Background(), input(`{"loop": false}`))
	require.NoError(t, err)
	require.True(t, drop)
}

// TestNoStateLeaks: nothing one call does is seen by the next: top-level
// variables are the call's own, the global object and the built-ins are
// frozen (changing them throws in strict mode).
func TestNoStateLeaks(t *testing.T) {
	t.Parallel()
	const src = `
let calls = 0;
var seen = [];
function attempt(f) {
	try { f(); return "changed"; } catch (e) { return e.name; }
}
function transform(callback) {
	calls++;
	seen.push(callback.body.n);
	return {type: "t", data: {
		calls: calls,
		seen: seen,
		global: attempt(() => { globalThis.leak = 1; }),
		implicit: attempt(() => { leak2 = 1; }),
		proto: attempt(() => { Object.prototype.polluted = true; }),
		array: attempt(() => { Array.prototype.push = () => 0; }),
		json: attempt(() => { JSON.parse = () => ({}); }),
		hookrelay: attempt(() => { hookrelay.localTime = null; }),
		math: attempt(() => { Math.PI = 3; }),
		leaked: typeof globalThis.leak + typeof ({}).polluted + String([].push(1)),
	}};
}`
	p := compile(t, src, adapter.Limits{})
	var first string
	for i := range 5 {
		ev, _, err := p.Run(context.Background(), input(`{"n": 1}`))
		require.NoError(t, err)
		if i == 0 {
			first = string(ev.Data)
			require.JSONEq(t, `{"calls":1,"seen":[1],"global":"TypeError","implicit":"ReferenceError","proto":"TypeError",
				"array":"TypeError","json":"TypeError","hookrelay":"TypeError","math":"TypeError","leaked":"undefinedundefined1"}`, first)
		}
		require.Equal(t, first, string(ev.Data))
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	const src = `function transform(callback) {
	return {type: "t", data: {
		now: Date.now(),
		date: new Date().toISOString(),
		random: typeof Math.random,
		symbolFor: typeof Symbol.for,
		buffers: typeof ArrayBuffer + typeof Uint8Array,
		weak: typeof WeakRef,
		keys: Object.keys(callback.headers),
		bodyKeys: Object.keys(callback.body),
	}};
}`
	p := compile(t, src, adapter.Limits{})
	in := input(`{"b": 1, "a": 2, "10": 3, "2": 4}`)
	in.Headers = http.Header{"Z-Last": {"1"}, "A-First": {"2"}, "m-lower": {"3"}, "M-Lower": {"4"}}
	var first []byte
	for range 20 {
		ev, _, err := p.Run(context.Background(), in)
		require.NoError(t, err)
		if first == nil {
			first = ev.Data
			require.JSONEq(t, `{"now":1796343302500,"date":"2026-12-04T00:15:02.500Z","random":"undefined","symbolFor":"undefined",
				"buffers":"undefinedundefined","weak":"undefined","keys":["a-first","m-lower","z-last"],"bodyKeys":["2","10","b","a"]}`, string(first))
		}
		require.Equal(t, string(first), string(ev.Data))
	}
}

func TestHookrelayObject(t *testing.T) {
	t.Parallel()
	p := compile(t, `function transform(c) {
	const b = c.body;
	let out;
	try { out = hookrelay.localTime(b.text, b.zone); } catch (e) { out = e.message; }
	return {type: "t", data: {out: out, form: hookrelay.parseForm("b=2&a=1&a=3&c=%E4%B8%AD")}};
}`, adapter.Limits{})
	for _, tc := range []struct{ text, zone, want string }{
		{"2026-12-04 08:15:00", "Asia/Shanghai", "2026-12-04T08:15:00+08:00"},
		{"2026/12/04 08:15", "Asia/Shanghai", "2026-12-04T08:15:00+08:00"},
		{"2026-12-04T08:15:00.250", "Asia/Shanghai", "2026-12-04T08:15:00.25+08:00"},
		{"2026-07-01 12:00", "Europe/Berlin", "2026-07-01T12:00:00+02:00"},
		{"2026-12-04 08:15", "+05:30", "2026-12-04T08:15:00+05:30"},
		{"2026-12-04 08:15", "Mars/Olympus", `hookrelay.localTime: unknown zone "Mars/Olympus"`},
		{"2026-12-04 08:15", "../../etc/passwd", `hookrelay.localTime: unknown zone "../../etc/passwd"`},
		{"04.12.2026", "UTC", `hookrelay.localTime: "04.12.2026" is not a local date-time like 2026-12-04 08:15:00`},
	} {
		body, _ := json.Marshal(map[string]string{"text": tc.text, "zone": tc.zone})
		ev, _, err := p.Run(context.Background(), input(string(body)))
		require.NoError(t, err)
		var data struct {
			Out  string            `json:"out"`
			Form map[string]string `json:"form"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &data))
		require.Equal(t, tc.want, data.Out, tc.text)
		require.Equal(t, map[string]string{"a": "1", "b": "2", "c": "中"}, data.Form)
	}
}

// TestConcurrentRuns: many goroutines on one Program (run with -race); each
// call sees its own callback only.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	p := compile(t, `let mine;
function transform(c) {
	mine = c.body.n;
	let s = 0;
	for (let i = 0; i < 100; i++) { s += i; }
	if (c.body.n % 7 === 0) { return null; }
	if (c.body.n % 11 === 0) { throw new Error("eleven " + c.body.n); }
	return {type: "t", ordering_key: "k" + mine, data: {n: mine, s: s}};
}`, adapter.Limits{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				n := g*1000 + i
				ev, drop, err := p.Run(context.Background(), input(`{"n": `+itoa(n)+`}`))
				switch {
				case n%7 == 0:
					if err != nil || !drop {
						errs <- errors.New("not dropped: " + itoa(n))
						return
					}
				case n%11 == 0:
					if err == nil || !strings.Contains(err.Error(), "eleven "+itoa(n)) {
						errs <- errors.New("no error: " + itoa(n))
						return
					}
				default:
					if err != nil || ev.OrderingKey != "k"+itoa(n) || string(ev.Data) != `{"n":`+itoa(n)+`,"s":4950}` {
						errs <- fmt.Errorf("wrong event for %d: %s %v", n, ev.Data, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestMemoryLimit: a call that allocates without bound is stopped over
// MaxMemoryBytes. Not parallel: the bound is checked against what the whole
// process allocates (shared among the calls running long), so the other
// tests' runaway calls must not run meanwhile.
func TestMemoryLimit(t *testing.T) {
	lim := adapter.Limits{CPUTime: 5 * time.Second, MaxMemoryBytes: 32 << 20}
	for _, tc := range []struct{ name, runaway string }{
		{name: "string doubled forever", runaway: `let s = 'x'.repeat(1 << 16); for (;;) { s = s + s; }`},
		{name: "objects kept forever", runaway: `const keep = {}; for (let i = 0; ; i++) { keep['k' + i] = {i: i, s: 'v' + i}; }`},
		{name: "array grown by index", runaway: `const a = []; for (let i = 0; ; i++) { a[i] = {i: i}; }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(t, "function transform(callback) {\n  if (callback.body.runaway) {\n"+tc.runaway+
				"\n  }\n  return {type: 'ok', data: {}};\n}", lim)
			_, _, err := p.Run(context.Background(), input(`{"runaway": true}`))
			var le *adapter.LimitError
			require.ErrorAs(t, err, &le)
			require.Equal(t, adapter.LimitMemory, le.Limit, le.Error())
			ev, _, err := p.Run(context.Background(), input(`{"runaway": false}`))
			require.NoError(t, err)
			require.Equal(t, "ok", ev.Type)
		})
	}
}
