package hookrelay

import (
	"strings"
	"unicode/utf8"
)

// CheckText reports whether s can be stored in a PostgreSQL text column of
// a UTF8 database and fits max bytes: PostgreSQL refuses invalid UTF-8 and
// NUL in text, and a statement that meets one fails as a whole, so a value
// must be refused at the door (EINVALID naming field) rather than fail a
// statement shared with others. max <= 0 means no length bound.
func CheckText(field, s string, max int) error {
	if max > 0 && len(s) > max {
		return Errorf(EINVALID, "%s longer than %d bytes", field, max)
	}
	if !utf8.ValidString(s) {
		return Errorf(EINVALID, "%s is not valid UTF-8", field)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return Errorf(EINVALID, "%s contains a NUL character", field)
	}
	return nil
}

// CheckHeaderValue reports whether s can be sent as an HTTP header value,
// as a value hookrelay copies into a delivery's headers must be (the
// ordering key, the event type, the carrier's name): Go's HTTP client
// refuses a request with a control character in a header value other than
// tab — U+0000 to U+001F and U+007F (DEL) — on every attempt. The rule is
// the client's own (httpguts.ValidHeaderFieldValue; written out here so the
// root package needs no module of its own, and held equal to the client by
// TestCheckHeaderValueIsTheClientsRule), so a value that passes is one the
// client sends. The error (EINVALID) names field and the first such
// character.
func CheckHeaderValue(field, s string) error {
	i := strings.IndexFunc(s, isHeaderControl)
	if i < 0 {
		return nil
	}
	return Errorf(EINVALID, "%s holds the control character U+%04X: a value sent in an HTTP header cannot hold U+0000 to U+001F (tab excepted) or U+007F", field, s[i])
}

// isHeaderControl reports whether r is a control character an HTTP header
// value cannot hold.
func isHeaderControl(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }
