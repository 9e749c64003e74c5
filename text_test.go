package hookrelay_test

import (
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
