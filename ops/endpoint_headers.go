package ops

import (
	"net/http"
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// Limits of an endpoint's custom headers.
const (
	MaxHeaders     = 20
	MaxHeaderName  = 256
	MaxHeaderValue = 4096
)

// HeaderMask stands for a custom header's value in every answer and page:
// values are write-only, like passwords. An input that gives the mask as a
// value is refused, so a form round trip cannot overwrite a real value.
const HeaderMask = "********"

// refusedHeaders are header names an endpoint cannot set: hop-by-hop and
// framing headers (the HTTP client owns them) and what hookrelay sends
// itself (signature, identity, delivery metadata).
var refusedHeaders = map[string]string{
	"Connection":        "a hop-by-hop header",
	"Keep-Alive":        "a hop-by-hop header",
	"Transfer-Encoding": "a hop-by-hop header",
	"Te":                "a hop-by-hop header",
	"Trailer":           "a hop-by-hop header",
	"Upgrade":           "a hop-by-hop header",
	"Host":              "set from the URL",
	"Content-Length":    "set from the body",
	"Content-Type":      "always application/json",
	"Content-Encoding":  "set by hookrelay",
	"Expect":            "not supported",
	"Authorization":     `set it with "auth"`,
	"Idempotency-Key":   "set by hookrelay (the webhook-id)",
	"User-Agent":        "set by hookrelay",
	"Traceparent":       `set by hookrelay when tracing is on (see "send_traceparent")`,
}

// checkHeaderName returns why name cannot be a custom header ("" if it can).
func checkHeaderName(name string) string {
	if name == "" || len(name) > MaxHeaderName {
		return "must be 1 to 256 characters"
	}
	for i := 0; i < len(name); i++ {
		if !isTokenByte(name[i]) {
			return "holds a character not allowed in a header name"
		}
	}
	canon := http.CanonicalHeaderKey(name)
	if why, ok := refusedHeaders[canon]; ok {
		return "cannot be set (" + why + ")"
	}
	lower := strings.ToLower(name)
	for _, p := range []string{"proxy-", "webhook-", "x-hookrelay-"} {
		if strings.HasPrefix(lower, p) {
			return "cannot be set (" + p + "* headers are hop-by-hop or hookrelay's own)"
		}
	}
	return ""
}

// isTokenByte reports whether c may appear in an HTTP token (RFC 9110).
func isTokenByte(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkHeaderValue returns why v cannot be a header value ("" if it can).
func checkHeaderValue(v string) string {
	if len(v) > MaxHeaderValue {
		return "longer than 4096 bytes"
	}
	if v == HeaderMask {
		return "is the mask answers show in place of values: send the value itself"
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return "holds a control character"
		}
	}
	if strings.TrimSpace(v) != v {
		return "starts or ends with white space"
	}
	return ""
}

// applyHeaders merges headers into f: a name with a value sets that header,
// a name with nil removes it; a creation starts from none.
func applyHeaders(in map[string]*string, f *db.EndpointFields) error {
	out := make(map[string]string, len(f.Headers)+len(in))
	for k, v := range f.Headers {
		out[k] = v
	}
	seen := map[string]string{}
	for name, v := range in {
		if why := checkHeaderName(name); why != "" {
			return fieldErrorf(fieldHeaders, "headers: %q %s", name, why)
		}
		canon := http.CanonicalHeaderKey(name)
		if other, dup := seen[canon]; dup {
			return fieldErrorf(fieldHeaders, "headers: %q and %q name the same header", other, name)
		}
		seen[canon] = name
		if v == nil {
			delete(out, canon)
			continue
		}
		if why := checkHeaderValue(*v); why != "" {
			return fieldErrorf(fieldHeaders, "headers: the value of %q %s", name, why)
		}
		if err := hookrelay.CheckText("headers value", *v, 0); err != nil {
			return asField(fieldHeaders, err)
		}
		out[canon] = *v
	}
	if len(out) > MaxHeaders {
		return fieldErrorf(fieldHeaders, "headers: at most %d headers", MaxHeaders)
	}
	if len(out) == 0 {
		out = nil
	}
	f.Headers = out
	return nil
}
