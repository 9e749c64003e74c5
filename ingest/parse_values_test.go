package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/filter"
)

// TestParseCallbackValuesKinds: the values content filters read come with
// their JSON kind, from the same pass that finds the routing fields; a
// repeated key counts by its last value, as for the routing fields.
func TestParseCallbackValuesKinds(t *testing.T) {
	t.Parallel()
	body := []byte(`{"s":"a\"b","n":-1.5e3,"t":true,"f":false,"z":null,"o":{"k":{"deep":1}},"a":[1,{"k":2}],"r":{"x":1},"r":"again"}`)
	paths := []string{"s", "n", "t", "f", "z", "o", "o.k.deep", "a", "a.k", "missing", "r", "r.x", "s.x"}
	fields, vals, err := ParseCallbackValues(body, paths...)
	require.NoError(t, err)
	plain, err := ParseCallback(body, paths...)
	require.NoError(t, err)
	require.Equal(t, plain, fields, "the routing fields are the same either way")
	want := []filter.Value{
		{Kind: filter.String, Text: `a"b`}, {Kind: filter.Number, Text: "-1.5e3"},
		{Kind: filter.Bool, Text: "true"}, {Kind: filter.Bool, Text: "false"}, {Kind: filter.Null},
		{Kind: filter.Object}, {Kind: filter.Number, Text: "1"}, {Kind: filter.Array}, {}, {},
		{Kind: filter.String, Text: "again"}, {}, {},
	}
	require.Equal(t, want, vals)
}

// BenchmarkParseCallbackValues is BenchmarkParseCallback's body read with
// the paths of a content filter too (compare the two).
func BenchmarkParseCallbackValues(b *testing.B) {
	body := []byte(`{"tracking_no":"SF1234567890","status":"in_transit","merchant_id":"42","carrier":"sf","events":[{"at":"2026-11-29T10:00:00Z","where":"Shenzhen hub","code":"ARR"},{"at":"2026-11-29T12:00:00Z","where":"Guangzhou","code":"DEP"}],"weight_kg":1.25,"recipient":{"name":"Li Lei","city":"Beijing"}}`)
	f, err := filter.Parse(`status == "in_transit" && weight_kg > 1 && recipient.city in ["Beijing", "Shanghai"]`)
	require.NoError(b, err)
	paths := append([]string{"tracking_no", "status", "merchant_id"}, f.Paths()...)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_, vals, err := ParseCallbackValues(body, paths...)
		if err != nil {
			b.Fatal(err)
		}
		if !f.Match(vals[3:]) {
			b.Fatal("no match")
		}
	}
}
