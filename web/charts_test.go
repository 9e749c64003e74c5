package web

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBarChartDrawsOneBarPerQueue(t *testing.T) {
	t.Parallel()
	values := make([]int64, 32)
	values[3], values[31] = 50, 100
	svg := string(barChart("backlog", values))
	require.Equal(t, 32, strings.Count(svg, "<rect "))
	require.Contains(t, svg, "queue 31: 100 pending")
	require.NotContains(t, svg, "style=", "no inline styles: the CSP forbids them")
}

func TestLineChartScalesAndEscapes(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	svg := string(lineChart(`<b>"x"`, "/s", from, to, []point{{from, 0}, {from.Add(30 * time.Minute), 40}, {to, 80}}))
	require.Contains(t, svg, "<polyline")
	require.Contains(t, svg, ">100<", "the y axis tops at a round number above the max")
	require.NotContains(t, svg, "<b>", "titles are escaped")
	empty := string(lineChart("t", "/s", from, to, nil))
	require.Contains(t, empty, "no samples yet")
	require.NotContains(t, empty, "<polyline")
}

func TestFlashTextNeverEchoesInput(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Retried 3 dead letter(s).", flashText("retried", "3"))
	require.Equal(t, "Retried ? dead letter(s).", flashText("retried", "<script>"))
	require.Empty(t, flashText("<script>alert(1)</script>", "1"))
}

func TestHumanFormats(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1,234,567", humanInt(1234567))
	require.Equal(t, "-1,000", humanInt(-1000))
	require.Equal(t, "1.5 KiB", humanBytes(1536))
	require.Equal(t, "5m10s", ago(5*time.Minute+10*time.Second))
	require.Equal(t, "2d04h", ago(52*time.Hour))
	out, ok := prettyJSON([]byte(`{"a":[1]}`))
	require.True(t, ok)
	require.Equal(t, "{\n  \"a\": [\n    1\n  ]\n}", out)
	_, ok = prettyJSON([]byte("not json"))
	require.False(t, ok)
}
