package ingest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestParseCallbackExtractsDotPaths(t *testing.T) {
	t.Parallel()
	body := []byte(`{"tracking_no":"TN1","status":"delivered","shipment":{"merchant":{"id":42},"tags":["a",{"x":1}]},"n":1.5e3,"esc":"a\"b\u00e9","t":true}`)
	f, err := ParseCallback(body, "tracking_no", "status", "shipment.merchant.id", "n", "esc", "t", "missing", "shipment.tags", "")
	require.NoError(t, err)
	require.Equal(t, Field{"TN1", true}, f[0])
	require.Equal(t, Field{"delivered", true}, f[1])
	require.Equal(t, Field{"42", true}, f[2], "numbers are kept as written")
	require.Equal(t, Field{"1.5e3", true}, f[3])
	require.Equal(t, Field{"a\"bé", true}, f[4])
	require.False(t, f[5].Found, "booleans are not keys")
	require.False(t, f[6].Found)
	require.False(t, f[7].Found, "arrays are not keys")
	require.False(t, f[8].Found)
}

func TestParseCallbackRejects(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		``, `[]`, `"x"`, `1`, `null`, `{`, `{"a":}`, `{"a":1,}`, `{"a":1}x`, `{"a":01}`, `{"a":"\x"}`,
		`{"a":"` + "\x01" + `"}`, `{"a":tru}`, `{a:1}`, `{"a":1 "b":2}`, "{\"a\":\"\xff\"}", `{"a":-}`, `{"a":1.}`, `{"a":1e}`,
	} {
		_, err := ParseCallback([]byte(bad), "a")
		require.Error(t, err, "%q", bad)
	}
	deep := strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1)
	_, err := ParseCallback([]byte(deep), "a")
	require.Error(t, err)
}

func TestParseCallbackRepeatedKeyLastWins(t *testing.T) {
	t.Parallel()
	f, err := ParseCallback([]byte(`{"a":{"b":"1"},"a":2,"c":"x","c":"y"}`), "a.b", "c")
	require.NoError(t, err)
	require.False(t, f[0].Found)
	require.Equal(t, "y", f[1].Value)
}

// oracle extracts the dot paths with encoding/json.
func oracle(body []byte, paths []string) ([]Field, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err == nil || !json.Valid(body) {
		return nil, false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make([]Field, len(paths))
	for i, path := range paths {
		if path == "" {
			continue
		}
		var cur any = obj
		for _, seg := range strings.Split(path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = m[seg]
		}
		switch x := cur.(type) {
		case string:
			out[i] = Field{x, true}
		case json.Number:
			out[i] = Field{string(x), true}
		}
	}
	return out, true
}

// FuzzCallbackParse checks ParseCallback against encoding/json: the same
// bodies are accepted (valid UTF-8 ones) and the same values found.
func FuzzCallbackParse(f *testing.F) {
	f.Add([]byte(`{"tracking_no":"TN1","status":"delivered","merchant_id":"7"}`), "tracking_no")
	f.Add([]byte(`{"a":{"b":{"c":12.5e-3}},"a":{"b":{"c":"x"}}}`), "a.b.c")
	f.Add([]byte(`{"k\u0061y":"v\n","arr":[1,{"k":2},[]],"z":null}`), "kay")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		paths := []string{"tracking_no", "status", "merchant_id", "a.b.c", path}
		got, err := ParseCallback(body, paths...)
		if !utf8.Valid(body) {
			return // encoding/json accepts invalid UTF-8 in strings; we refuse it
		}
		want, ok := oracle(body, paths)
		if ok != (err == nil) {
			t.Fatalf("accept mismatch: ours err=%v, encoding/json ok=%v, body %q", err, ok, body)
		}
		if ok {
			require.Equal(t, want, got, "body %q", body)
		}
	})
}

func BenchmarkParseCallback(b *testing.B) {
	body := []byte(`{"tracking_no":"SF1234567890","status":"in_transit","merchant_id":"42","carrier":"sf","events":[{"at":"2026-11-29T10:00:00Z","where":"Shenzhen hub","code":"ARR"},{"at":"2026-11-29T12:00:00Z","where":"Guangzhou","code":"DEP"}],"weight_kg":1.25,"recipient":{"name":"Li Lei","city":"Beijing"}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCallback(body, "tracking_no", "status", "merchant_id"); err != nil {
			b.Fatal(err)
		}
	}
}
