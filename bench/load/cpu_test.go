package load

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseCPUPressure(t *testing.T) {
	t.Parallel()
	d, err := parseCPUPressure("some avg10=7.89 avg60=28.32 avg300=50.97 total=1911105827\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	require.NoError(t, err)
	require.Equal(t, 1911105827*time.Microsecond, d)
	// A kernel that prints no "full" line for CPU (before 5.13) and no
	// trailing newline.
	d, err = parseCPUPressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=42")
	require.NoError(t, err)
	require.Equal(t, 42*time.Microsecond, d)
	for _, bad := range []string{
		"",
		"full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00\n",
		"some total=-1\n",
		"some total=12x\n",
	} {
		_, err := parseCPUPressure(bad)
		require.Error(t, err, "%q", bad)
	}
}

// TestCPUPressureReadsTheKernelsTotal reads the machine's own file: where
// the kernel has pressure-stall information, the total is read and never
// goes back; where it has none, the error says so rather than a zero.
func TestCPUPressureReadsTheKernelsTotal(t *testing.T) {
	t.Parallel()
	first, err := CPUPressure()
	if _, statErr := os.Stat("/proc/pressure/cpu"); statErr != nil {
		require.Error(t, err)
		return
	}
	require.NoError(t, err)
	second, err := CPUPressure()
	require.NoError(t, err)
	require.GreaterOrEqual(t, second, first)
}

func TestPressurePct(t *testing.T) {
	t.Parallel()
	got := PressurePct(time.Second, 1500*time.Millisecond, 2*time.Second)
	require.NotNil(t, got)
	require.InDelta(t, 25.0, *got, 1e-9)
	// A hair over the wall time on a saturated machine: capped.
	got = PressurePct(0, 2001*time.Millisecond, 2*time.Second)
	require.NotNil(t, got)
	require.InDelta(t, 100.0, *got, 1e-9)
	require.Nil(t, PressurePct(-1, time.Second, time.Second), "start unknown")
	require.Nil(t, PressurePct(time.Second, -1, time.Second), "end unknown")
	require.Nil(t, PressurePct(0, time.Second, 0), "no wall time")
}
