package load

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCounters(t *testing.T) {
	t.Parallel()
	text := `# HELP hookrelay_carrier_refusals_logged_total Rows written.
# TYPE hookrelay_carrier_refusals_logged_total counter
hookrelay_carrier_refusals_logged_total 42
hookrelay_carrier_refusals_logged_total_extra 7
hookrelay_carrier_callbacks_total{carrier="3",outcome="accepted"} 100
hookrelay_carrier_callbacks_total{carrier="3",outcome="parse"} 5
hookrelay_carrier_callbacks_total{carrier="4",outcome="parse"} 11
hookrelay_carrier_callbacks_total{carrier="4",outcome="signature"} 2 1700000000000
`
	all, err := ParseCounters(strings.NewReader(text), nil,
		"hookrelay_carrier_refusals_logged_total", "hookrelay_carrier_callbacks_total", "absent_total")
	require.NoError(t, err)
	require.Equal(t, map[string]float64{
		"hookrelay_carrier_refusals_logged_total": 42,
		"hookrelay_carrier_callbacks_total":       118,
		"absent_total":                            0,
	}, all)

	four, err := ParseCounters(strings.NewReader(text), []string{`carrier="4"`}, "hookrelay_carrier_callbacks_total")
	require.NoError(t, err)
	require.Equal(t, 13.0, four["hookrelay_carrier_callbacks_total"])

	accepted, err := ParseCounters(strings.NewReader(text), []string{`carrier="3"`, `outcome="accepted"`}, "hookrelay_carrier_callbacks_total")
	require.NoError(t, err)
	require.Equal(t, 100.0, accepted["hookrelay_carrier_callbacks_total"])

	_, err = ParseCounters(strings.NewReader("hookrelay_x{a=\"1\" 3\n"), nil, "hookrelay_x")
	require.Error(t, err)
}
