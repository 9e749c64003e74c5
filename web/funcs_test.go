package web

import (
	"html/template"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExcerptKeepsEachStatusWhole(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]template.HTML{
		"HTTP 500":                     `<span class="status">HTTP 500</span>`,
		"dial: refused":                `dial: refused`,
		"<b>HTTP 503</b> & HTTP 429 x": `&lt;b&gt;<span class="status">HTTP 503</span>&lt;/b&gt; &amp; <span class="status">HTTP 429</span> x`,
		"HTTP 5000 is no status":       `HTTP 5000 is no status`,
	} {
		require.Equal(t, want, excerpt(in), in)
	}
}

func TestPlural(t *testing.T) {
	t.Parallel()
	require.Equal(t, "0 attempts", plural(0, "attempt"))
	require.Equal(t, "1 attempt", plural(1, "attempt"))
	require.Equal(t, "2 attempts", plural(2, "attempt"))
}
