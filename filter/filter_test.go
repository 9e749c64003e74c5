package filter_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/filter"
)

// values returns the values of f's paths from m (absent when not in m).
func values(f *filter.Filter, m map[string]filter.Value) []filter.Value {
	out := make([]filter.Value, len(f.Paths()))
	for i, p := range f.Paths() {
		out[i] = m[p]
	}
	return out
}

func str(s string) filter.Value { return filter.Value{Kind: filter.String, Text: s} }
func num(s string) filter.Value { return filter.Value{Kind: filter.Number, Text: s} }

func TestMatch(t *testing.T) {
	t.Parallel()
	cb := map[string]filter.Value{
		"status":       str("DELIVERED"),
		"weight":       num("2.5"),
		"parcel.count": num("3"),
		"parcel.flags": {Kind: filter.Array},
		"meta":         {Kind: filter.Object},
		"note":         {Kind: filter.Null},
		"express":      {Kind: filter.Bool, Text: "true"},
		"at":           str("2026-12-03T10:00:00Z"),
		"big":          num("1e3"),
		"carrier-code": str("DHL"),
		"2nd.leg":      str("x"),
	}
	cases := []struct {
		src  string
		want bool
	}{
		{`status == "DELIVERED"`, true},
		{`status != "DELIVERED"`, false},
		{`missing != "DELIVERED"`, true},
		{`missing == "DELIVERED"`, false},
		{`weight > 2`, true},
		{`weight >= 2.5 && weight <= 2.5`, true},
		{`weight < 2`, false},
		{`big == 1000`, true},
		{`parcel.count in [1, 2, 3]`, true},
		{`status in ["IN_TRANSIT", "OUT_FOR_DELIVERY"]`, false},
		{`exists(parcel.flags) && exists(note) && !exists(missing)`, true},
		{`note == null && express == true`, true},
		{`express == "true"`, false},
		{`status > 5`, false},
		{`at >= "2026-12-01" && at < "2026-12-04"`, true},
		{`status == "X" || weight > 2 && express == true`, true},
		{`(status == "X" || weight > 2) && express == false`, false},
		{`!(status == "X")`, true},
		{`carrier-code == "DHL" && 2nd.leg == "x"`, true},
		{`meta == null`, false},
		{`exists ( meta )`, true},
	}
	for _, c := range cases {
		f, err := filter.Parse(c.src)
		require.NoError(t, err, c.src)
		require.Equal(t, c.want, f.Match(values(f, cb)), c.src)
	}
}

func TestParseErrorsNamePosition(t *testing.T) {
	t.Parallel()
	cases := []struct {
		src string
		pos int
		msg string
	}{
		{``, 1, "empty filter"},
		{`status ==`, 10, "expected a value"},
		{`status = "x"`, 8, "unexpected character"},
		{`status == "x" &&`, 17, "expected a path"},
		{`(status == "x"`, 15, "expected )"},
		{`status in "x"`, 11, "expected [ after in"},
		{`status in ["x" "y"]`, 16, "expected , or ]"},
		{`status == "x`, 11, "closing quote"},
		{`a..b == 1`, 1, "empty segment"},
		{`status == DELIVERED`, 11, "expected a value"},
		{`weight > 1.2.3`, 10, "invalid number"},
		{`exists(1.5)`, 8, "wants a path"},
		{`status == "x" extra`, 15, "unexpected"},
	}
	for _, c := range cases {
		_, err := filter.Parse(c.src)
		var fe *filter.Error
		require.ErrorAs(t, err, &fe, c.src)
		require.Equal(t, c.pos, fe.Pos, "%s: %v", c.src, err)
		require.Contains(t, fe.Error(), c.msg, c.src)
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	deep := ""
	for range filter.MaxDepth + 2 {
		deep += "("
	}
	_, err := filter.Parse(deep + "a == 1")
	require.ErrorContains(t, err, "nested deeper")
	many := "a == 1"
	for range filter.MaxTerms {
		many += " || a == 1"
	}
	_, err = filter.Parse(many)
	require.ErrorContains(t, err, "more than 64 comparisons")
}
