package hookrelay_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hookrelay/hookrelay"
)

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string // "" = accepted, else the message
	}{
		{"", 10, ""},
		{"naïve 配送", 0, ""},
		{"0123456789", 10, ""},
		{"0123456789a", 10, "field longer than 10 bytes"},
		{"a\x00b", 10, "field contains a NUL character"},
		{"\xff\xfe", 10, "field is not valid UTF-8"},
		{"\xed\xa0\x80", 10, "field is not valid UTF-8"}, // an encoded surrogate
	} {
		err := hookrelay.CheckText("field", tc.s, tc.max)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.s, err)
			}
			continue
		}
		if hookrelay.CodeOf(err) != hookrelay.EINVALID || hookrelay.ErrorMessage(err) != tc.want {
			t.Errorf("%q: got %v, want invalid %q", tc.s, err, tc.want)
		}
	}
}

func TestCheckHeaderValue(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want string // "" = accepted, else the control character named
	}{
		{"", ""},
		{"SF1234567890", ""},
		{"a\tb", ""},       // tab is allowed in a header value
		{"naïve 配送 ✓", ""}, // non-ASCII UTF-8 goes as its bytes
		{"\x80\xff", ""},   // so does any byte from 0x80 (CheckText refuses invalid UTF-8)
		{"a\rb", "U+000D"},
		{"a\nb", "U+000A"},
		{"a\r\nX-Injected: 1", "U+000D"},
		{"\x00", "U+0000"},
		{"a\x01", "U+0001"},
		{"\x1f", "U+001F"},
		{"del\x7f", "U+007F"},
		{"ok\tthen\x0b", "U+000B"},
	} {
		err := hookrelay.CheckHeaderValue("field", tc.s)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.s, err)
			}
			continue
		}
		want := "field holds the control character " + tc.want +
			": a value sent in an HTTP header cannot hold U+0000 to U+001F (tab excepted) or U+007F"
		if hookrelay.CodeOf(err) != hookrelay.EINVALID || hookrelay.ErrorMessage(err) != want {
			t.Errorf("%q: got %v, want invalid %q", tc.s, err, want)
		}
	}
}

// TestCheckHeaderValueIsTheClientsRule: every single byte, alone and
// between letters, is accepted exactly when Go's HTTP client sends it.
func TestCheckHeaderValueIsTheClientsRule(t *testing.T) {
	for b := range 256 {
		for _, s := range []string{string([]byte{byte(b)}), "a" + string([]byte{byte(b)}) + "b"} {
			req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header["X-Value"] = []string{s}
			// The transport checks header values before it dials; the
			// port is closed, so a sendable value fails only at connecting.
			_, err = http.DefaultTransport.RoundTrip(req)
			refused := err != nil && strings.Contains(err.Error(), "invalid header field value")
			if got := hookrelay.CheckHeaderValue("v", s) != nil; got != refused {
				t.Errorf("byte %#02x in %q: CheckHeaderValue refuses %v, the client refuses %v (%v)", b, s, got, refused, err)
			}
		}
	}
}
