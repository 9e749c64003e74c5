package eventtype

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decode reads what encoding/json (UseNumber) reads, and refuses what it
// refuses.
func TestDecodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	event, err := os.ReadFile("testdata/tracking.updated.json")
	require.NoError(t, err)
	inputs := []string{
		string(event), `{}`, `[]`, ` {"a": [1, -2.5e+3, 0, 0.1, 1E9, true, false, null, {"b": []}]} `,
		`"plain"`, `"esc\"aped\\ \/ \n \u00e9 \ud83d\ude00"`, `"中文"`, "\"bad \xff utf-8\"", `{"a": 1, "a": 2}`,
		`-0`, `12345678901234567890123`, `[[[[[]]]]]`,
		// Refused by both.
		``, `{`, `[1,]`, `{"a" 1}`, `{"a": 1,}`, `01`, `1.`, `-`, `1e`, `.5`, `+1`, `tru`, `nul`, `"unterminated`,
		"\"tab\tinside\"", `"\x"`, `"\u12"`, `{} {}`, `[1] x`, `{1: 2}`, `'single'`,
	}
	for _, in := range inputs {
		got, gotErr := decode([]byte(in))
		dec := json.NewDecoder(bytes.NewReader([]byte(in)))
		dec.UseNumber()
		var want any
		_ = dec.Decode(&want)
		// Unmarshal refuses trailing data too.
		wantErr := json.Unmarshal([]byte(in), new(any))
		if wantErr != nil {
			require.Error(t, gotErr, "%q: encoding/json refuses it (%v)", in, wantErr)
			continue
		}
		require.NoError(t, gotErr, "%q", in)
		require.Equal(t, want, got, "%q", in)
	}
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	_, err = decode([]byte(deep))
	require.ErrorContains(t, err, "nested deeper")
}
