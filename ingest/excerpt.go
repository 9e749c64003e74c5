package ingest

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Bounds of a refusal's excerpt of the request.
const (
	// ExcerptBodyBytes is how much of the body a refusal keeps.
	ExcerptBodyBytes = 2048
	// excerptHeaders bounds the headers kept, excerptHeaderBytes each value.
	excerptHeaders     = 40
	excerptHeaderBytes = 256
)

// credentialHeaders are never kept in a refusal's excerpt, nor is a header
// whose name contains one of credentialWords.
var credentialHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true,
	"X-Api-Key": true, "Api-Key": true, "X-Auth-Token": true,
}

var credentialWords = []string{"signature", "secret", "token", "password", "auth", "cookie", "apikey", "api-key", "credential"}

// isCredentialHeader reports whether a header (canonical name) may carry a
// credential: an excerpt leaves it out.
func isCredentialHeader(name string) bool {
	if credentialHeaders[name] {
		return true
	}
	lower := strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// ExcerptHeaders returns the headers of a request safe to keep: without
// those that may carry credentials (Authorization, X-Api-Key, signatures,
// cookies and any whose name says secret, token or password), at most 40,
// each value cut to 256 bytes of text (values of a repeated header joined
// with ", ").
func ExcerptHeaders(h http.Header) map[string]string {
	out := make(map[string]string, min(len(h), excerptHeaders))
	for name, vals := range h {
		if len(out) == excerptHeaders {
			break
		}
		if isCredentialHeader(http.CanonicalHeaderKey(name)) {
			continue
		}
		out[TextSafe(name, excerptHeaderBytes)] = TextSafe(strings.Join(vals, ", "), excerptHeaderBytes)
	}
	return out
}

// TextSafe returns at most limit bytes of b as text PostgreSQL stores and a
// page shows: cut on a character boundary, invalid UTF-8 replaced by
// U+FFFD and NUL bytes by U+2400.
func TextSafe(s string, limit int) string {
	if len(s) > limit {
		s = s[:limit]
		// Do not leave half a character at the cut.
		for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
			r, size := utf8.DecodeLastRuneInString(s)
			if r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\u2400")
	}
	return s
}

// withBody carries a refused callback's body excerpt to the refusal log
// (Watch.WithBody, Watch.Refused); everything else is the wrapped error's.
type withBody struct {
	err     error
	excerpt string
	size    int
}

func (e *withBody) Error() string { return e.err.Error() }
func (e *withBody) Unwrap() error { return e.err }

// bodyOf returns the excerpt attached to err by Watch.WithBody.
func bodyOf(err error) (excerpt string, size int) {
	var b *withBody
	if errors.As(err, &b) {
		return b.excerpt, b.size
	}
	return "", 0
}
