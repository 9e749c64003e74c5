package audit_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookrelay/hookrelay/audit"
)

// oracleRedact is what Redact means, written the slow way: the JSON
// decoded, every secret field's value (and every header's) replaced unless
// empty, encoded again.
func oracleRedact(raw []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil || x == nil {
		return nil, false
	}
	var walk func(any) any
	hide := func(v any) any {
		switch t := v.(type) {
		case nil:
			return nil
		case string:
			if t == "" {
				return t
			}
		case []any:
			if len(t) == 0 {
				return t
			}
		case map[string]any:
			if len(t) == 0 {
				return t
			}
		}
		return audit.Redacted
	}
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, v := range t {
				h, isObj := v.(map[string]any)
				switch {
				case strings.EqualFold(k, "headers") && isObj:
					for name := range h {
						h[name] = audit.Redacted
					}
				case strings.EqualFold(k, "headers") || audit.SecretField(k):
					t[k] = hide(v)
				default:
					t[k] = walk(v)
				}
			}
		case []any:
			for i, v := range t {
				t[i] = walk(v)
			}
		}
		return x
	}
	return walk(x), true
}

// FuzzRedact: Redact of any valid JSON document means what the slow
// decode-redact-encode means (the same values, secrets hidden), and is
// itself valid JSON; invalid JSON is an error, never a panic.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{`{"url":"https://x","secret":"s"}`, `[{"token":"t"},{"a":[1,2,{"password":""}]}]`,
		` {"headers":{"X":"1","Y":{"z":2}},"Headers":"h","auth":{}} `, `{"k\u0065y":"v","a\"b":null}`, `null`, `"x"`, `12.5e3`,
		`{"api_key_prefix":"ck_","public_key":"p","nested":{"credential":{"x":1}}}`, `{`, `{"a":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := audit.Redact(json.RawMessage(raw))
		want, ok := oracleRedact(raw)
		if !json.Valid(raw) {
			if err == nil {
				t.Fatalf("invalid JSON %q redacted without an error: %q", raw, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", raw, err)
		}
		if !ok {
			if got != "" {
				t.Fatalf("null redacted to %q", got)
			}
			return
		}
		d := json.NewDecoder(strings.NewReader(got))
		d.UseNumber()
		var back any
		if err := d.Decode(&back); err != nil {
			t.Fatalf("redacted %q is not JSON: %q: %v", raw, got, err)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(back)
		if !bytes.Equal(wb, gb) {
			t.Fatalf("redacted %q:\n got  %s\n want %s", raw, gb, wb)
		}
	})
}
