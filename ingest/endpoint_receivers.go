package ingest

import (
	"net/http"
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/filter"
)

// Limits of an endpoint's custom headers and credentials.
const (
	maxHeaders         = 20
	maxHeaderName      = 256
	maxHeaderValue     = 4096
	maxCredentialBytes = 4096
)

// HeaderMask stands for a custom header's value in every answer: values
// are write-only, like passwords. A request that sends the mask back as a
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
}

// checkHeaderName returns why name cannot be a custom header ("" if it can).
func checkHeaderName(name string) string {
	if name == "" || len(name) > maxHeaderName {
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
	if len(v) > maxHeaderValue {
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

// applyHeaders merges a headers object into f: a name with a string sets
// that header, a name with null removes it (PATCH); POST starts from none.
func applyHeaders(in map[string]*string, f *db.EndpointFields) error {
	out := make(map[string]string, len(f.Headers)+len(in))
	for k, v := range f.Headers {
		out[k] = v
	}
	seen := map[string]string{}
	for name, v := range in {
		if why := checkHeaderName(name); why != "" {
			return invalidf("headers: %q %s", name, why)
		}
		canon := http.CanonicalHeaderKey(name)
		if other, dup := seen[canon]; dup {
			return invalidf("headers: %q and %q name the same header", other, name)
		}
		seen[canon] = name
		if v == nil {
			delete(out, canon)
			continue
		}
		if why := checkHeaderValue(*v); why != "" {
			return invalidf("headers: the value of %q %s", name, why)
		}
		if err := hookrelay.CheckText("headers value", *v, 0); err != nil {
			return err
		}
		out[canon] = *v
	}
	if len(out) > maxHeaders {
		return invalidf("headers: at most %d headers", maxHeaders)
	}
	if len(out) == 0 {
		out = nil
	}
	f.Headers = out
	return nil
}

// authRequest is the "auth" object of a request.
type authRequest struct {
	Type     string  `json:"type"`
	Username *string `json:"username"`
	Password *string `json:"password"`
	Token    *string `json:"token"`
}

// toAuth validates a and returns the credentials it names.
func (a *authRequest) toAuth() (*db.EndpointAuth, error) {
	check := func(field string, v *string, required bool) (string, error) {
		if v == nil || *v == "" {
			if required {
				return "", invalidf("auth.%s is required for type %q", field, a.Type)
			}
			return "", nil
		}
		if len(*v) > maxCredentialBytes {
			return "", invalidf("auth.%s: longer than %d bytes", field, maxCredentialBytes)
		}
		for i := 0; i < len(*v); i++ {
			if c := (*v)[i]; c < 0x20 || c == 0x7f {
				return "", invalidf("auth.%s holds a control character", field)
			}
		}
		if err := hookrelay.CheckText("auth."+field, *v, 0); err != nil {
			return "", err
		}
		return *v, nil
	}
	switch a.Type {
	case "basic":
		if a.Token != nil {
			return nil, invalidf(`auth.token is for type "bearer"`)
		}
		user, err := check("username", a.Username, true)
		if err != nil {
			return nil, err
		}
		if strings.Contains(user, ":") {
			return nil, invalidf("auth.username cannot hold a colon (basic authentication)")
		}
		pass, err := check("password", a.Password, false)
		if err != nil {
			return nil, err
		}
		return &db.EndpointAuth{Type: "basic", Username: user, Password: pass}, nil
	case "bearer":
		if a.Username != nil || a.Password != nil {
			return nil, invalidf(`auth.username and auth.password are for type "basic"`)
		}
		tok, err := check("token", a.Token, true)
		if err != nil {
			return nil, err
		}
		if strings.ContainsAny(tok, " \t") {
			return nil, invalidf("auth.token cannot hold white space")
		}
		return &db.EndpointAuth{Type: "bearer", Token: tok}, nil
	}
	return nil, invalidf(`auth.type must be "basic" or "bearer"`)
}

// checkFilter compiles a filter so a bad one is refused at once, naming
// where it goes wrong.
func checkFilter(src string) error {
	if src == "" {
		return nil
	}
	if err := hookrelay.CheckText("filter", src, filter.MaxLength); err != nil {
		return err
	}
	if _, err := filter.Parse(src); err != nil {
		return invalidf("filter: %v", err)
	}
	return nil
}

// AuthJSON is an endpoint's credentials as answers show them: the type and
// the username, never a password or token.
type AuthJSON struct {
	Type     string `json:"type"`
	Username string `json:"username,omitempty"`
}

func authJSON(a *db.EndpointAuth) *AuthJSON {
	if a == nil {
		return nil
	}
	return &AuthJSON{Type: a.Type, Username: a.Username}
}

func headersJSON(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = HeaderMask
	}
	return out
}
