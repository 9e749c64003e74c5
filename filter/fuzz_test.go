package filter_test

import (
	"testing"

	"github.com/hookrelay/hookrelay/filter"
)

// FuzzParse: any source either compiles or fails with a position inside it
// (never a panic), and a compiled filter evaluates against values of every
// kind without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`status == "DELIVERED" && weight > 2`,
		`a.b in [1, "x", true, null] || !exists(c)`,
		`((x != -1.5e3))`,
		`status ==`,
		`"unterminated`,
		`exists(a) && b <= "z"`,
	} {
		f.Add(s)
	}
	kinds := []filter.Value{
		{}, {Kind: filter.String, Text: "DELIVERED"}, {Kind: filter.Number, Text: "2.5"},
		{Kind: filter.Bool, Text: "true"}, {Kind: filter.Null}, {Kind: filter.Object}, {Kind: filter.Array},
		{Kind: filter.Number, Text: "not a number"},
	}
	f.Fuzz(func(t *testing.T, src string) {
		flt, err := filter.Parse(src)
		if err != nil {
			fe, ok := err.(*filter.Error)
			if !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if fe.Pos < 1 || fe.Pos > len(src)+1 && len(src) <= filter.MaxLength {
				t.Fatalf("position %d outside a source of %d bytes: %v", fe.Pos, len(src), err)
			}
			return
		}
		vals := make([]filter.Value, len(flt.Paths()))
		for _, k := range kinds {
			for i := range vals {
				vals[i] = k
			}
			flt.Match(vals)
		}
	})
}
