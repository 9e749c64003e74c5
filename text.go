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
