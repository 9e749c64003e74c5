package audit

import (
	"bytes"
	"encoding/json"
	"errors"
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
// carry credentials). nil gives "". The JSON is v's encoding, compact, its
// fields in their order: one pass over the encoded bytes, no decoding into
// maps and encoding again.
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
	} else if !json.Valid(raw) {
		return "", errors.New("audit: invalid JSON")
	}
	r := redactor{src: raw}
	r.ws()
	if bytes.HasPrefix(raw[r.i:], []byte("null")) {
		return "", nil
	}
	r.out = make([]byte, 0, len(raw))
	r.value(true)
	return string(r.out), nil
}

// redactor copies valid JSON from src to out, compact, with the values of
// secret fields replaced.
type redactor struct {
	src []byte
	i   int
	out []byte
}

func (r *redactor) ws() {
	for r.i < len(r.src) {
		switch r.src[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// value copies (emit) or skips the value at r.i.
func (r *redactor) value(emit bool) {
	r.ws()
	switch r.src[r.i] {
	case '{':
		r.object(emit, false)
	case '[':
		r.i++
		if emit {
			r.out = append(r.out, '[')
		}
		for first := true; ; first = false {
			r.ws()
			if r.src[r.i] == ']' {
				break
			}
			if !first {
				r.i++ // ','
				if emit {
					r.out = append(r.out, ',')
				}
			}
			r.value(emit)
			r.ws()
		}
		r.i++
		if emit {
			r.out = append(r.out, ']')
		}
	case '"':
		start := r.i
		r.skipString()
		if emit {
			r.out = append(r.out, r.src[start:r.i]...)
		}
	default: // number, true, false, null
		start := r.i
	scalar:
		for ; r.i < len(r.src); r.i++ {
			switch r.src[r.i] {
			case ' ', '\t', '\n', '\r', ',', ']', '}':
				break scalar
			}
		}
		if emit {
			r.out = append(r.out, r.src[start:r.i]...)
		}
	}
}

func (r *redactor) skipString() {
	for r.i++; r.src[r.i] != '"'; r.i++ {
		if r.src[r.i] == '\\' {
			r.i++
		}
	}
	r.i++
}

// object copies or skips the object at r.i, redacting its secret fields;
// with headers, every field's value (a headers object: names kept).
func (r *redactor) object(emit, headers bool) {
	r.i++
	if emit {
		r.out = append(r.out, '{')
	}
	for first := true; ; first = false {
		r.ws()
		if r.src[r.i] == '}' {
			break
		}
		if !first {
			r.i++ // ','
			r.ws()
			if emit {
				r.out = append(r.out, ',')
			}
		}
		start := r.i
		r.skipString()
		key := r.src[start:r.i]
		if emit {
			r.out = append(r.out, key...)
			r.out = append(r.out, ':')
		}
		r.ws()
		r.i++ // ':'
		r.ws()
		switch {
		case !emit:
			r.value(false)
		case headers:
			r.value(false)
			r.out = append(r.out, redactedJSON...)
		default:
			name := fieldName(key)
			switch {
			case strings.EqualFold(name, "headers") && r.src[r.i] == '{':
				r.object(true, true)
			case strings.EqualFold(name, "headers") || secretField(name):
				r.secret()
			default:
				r.value(true)
			}
		}
		r.ws()
	}
	r.i++
	if emit {
		r.out = append(r.out, '}')
	}
}

// secret copies a secret field's value when it holds nothing (null, "",
// [] or {}: "no secret" stays visible), else Redacted.
func (r *redactor) secret() {
	start := len(r.out)
	r.value(true)
	switch string(r.out[start:]) {
	case "null", `""`, "[]", "{}":
		return
	}
	r.out = append(r.out[:start], redactedJSON...)
}

var redactedJSON = []byte(`"` + Redacted + `"`)

// fieldName is the name of an object key as JSON writes it (quotes
// included).
func fieldName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1 : len(key)-1])
	}
	var s string
	_ = json.Unmarshal(key, &s)
	return s
}
