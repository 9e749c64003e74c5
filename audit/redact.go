package audit

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Redacted replaces a secret's value in a stored before/after.
const Redacted = "[redacted]"

// secretWords make a field secret when its name (lower case, without "_"
// and "-") contains one of them.
var secretWords = []string{"secret", "password", "passwd", "token", "totp", "authorization", "privatekey",
	"credential", "cookie", "hash", "apikey", "otp"}

// secretNames are field names secret as a whole.
var secretNames = map[string]bool{"auth": true, "key": true, "recoverycodes": true}

// nameFolder drops the separators of a field's name (built once: a
// Replacer is costly to build and safe to share).
var nameFolder = strings.NewReplacer("_", "", "-", "")

// secretField reports whether a field named name holds a secret. A key's
// displayable prefix and a public key are not secrets.
func secretField(name string) bool {
	n := nameFolder.Replace(strings.ToLower(name))
	if n == "apikeyprefix" || n == "keyprefix" || n == "publickey" {
		return false
	}
	if secretNames[n] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Redact returns v as JSON with every secret replaced by Redacted: the
// values of fields whose names say secret (secretField: signing secrets,
// API keys and their hashes, tokens, passwords, TOTP, credentials) and of
// every custom header ("headers": names kept, values redacted, as they may
// carry credentials). nil gives "".
func Redact(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return "", err
		}
	}
	if bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return "", err
	}
	out, err := json.Marshal(redact(x))
	return string(out), err
}

func redact(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			n := strings.ToLower(k)
			switch {
			case n == "headers":
				if h, ok := v.(map[string]any); ok {
					for name := range h {
						h[name] = Redacted
					}
					continue
				}
				t[k] = redactValue(v)
			case secretField(k):
				t[k] = redactValue(v)
			default:
				t[k] = redact(v)
			}
		}
		return t
	case []any:
		for i, v := range t {
			t[i] = redact(v)
		}
		return t
	}
	return x
}

// redactValue is Redacted for a value that holds something, the value
// itself when empty (so "no secret" stays visible).
func redactValue(v any) any {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if t == "" {
			return ""
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
	return Redacted
}
