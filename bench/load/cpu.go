package load

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProcCPU returns the user+system CPU ticks a process has used, from
// /proc/<pid>/stat; withChildren adds the ticks of its reaped children
// (cutime+cstime), which is how the CPU of PostgreSQL backends that already
// exited stays counted (the postmaster reaps them).
func ProcCPU(pid int, withChildren bool) (int64, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseStatTicks(raw, withChildren)
}

// parseStatTicks parses a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may contain spaces, so fields are counted after the
// last ')': utime, stime, cutime, cstime are fields 14–17.
func parseStatTicks(raw []byte, withChildren bool) (int64, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("malformed stat")
	}
	f := strings.Fields(string(raw[end+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 15 {
		return 0, fmt.Errorf("short stat")
	}
	last := 15 // stime, field 15
	if withChildren {
		last = 17
	}
	var sum int64
	for i := 14; i <= last; i++ {
		v, err := strconv.ParseInt(f[i-3], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat field %d: %w", i, err)
		}
		sum += v
	}
	return sum, nil
}

// PostgresCPU returns the CPU ticks of every process named postgres on the
// machine (backends, background workers, the postmaster with its reaped
// children). When postmaster is non-zero, only that server's processes count
// (its children and itself).
func PostgresCPU(postmaster int) (int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || end < open || string(raw[open+1:end]) != "postgres" {
			continue
		}
		isMaster := true
		if postmaster != 0 {
			f := strings.Fields(string(raw[end+1:]))
			if len(f) < 2 {
				continue
			}
			ppid, _ := strconv.Atoi(f[1])
			if pid != postmaster && ppid != postmaster {
				continue
			}
			isMaster = pid == postmaster
		} else {
			f := strings.Fields(string(raw[end+1:]))
			if len(f) >= 2 {
				ppid, _ := strconv.Atoi(f[1])
				isMaster = !isPostgres(ppid)
			}
		}
		t, err := parseStatTicks(raw, isMaster)
		if err != nil {
			continue
		}
		sum += t
	}
	return sum, nil
}

func isPostgres(pid int) bool {
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return err == nil && strings.TrimSpace(string(comm)) == "postgres"
}

var (
	clkTckOnce sync.Once
	clkTck     int64
)

// ClockTicks returns the kernel clock ticks per second (getconf CLK_TCK,
// 100 when that cannot be run).
func ClockTicks() int64 {
	clkTckOnce.Do(func() {
		clkTck = 100
		out, err := exec.Command("getconf", "CLK_TCK").Output()
		if err != nil {
			return
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && v > 0 {
			clkTck = v
		}
	})
	return clkTck
}

// TicksToDuration converts CPU ticks to time.
func TicksToDuration(ticks int64) time.Duration {
	return time.Duration(ticks) * time.Second / time.Duration(ClockTicks())
}

// LoadAvg1m returns the one-minute load average (0 when unreadable).
func LoadAvg1m() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// CPUPressure returns the machine's cumulative CPU pressure, Linux's
// pressure-stall "some" total from /proc/pressure/cpu: the wall time during
// which at least one runnable task was waiting for a CPU. Its growth over a
// phase, divided by the phase's length, says how much of the phase every
// process on the machine spent queued for the two cores — the cause of a
// latency tail that the statements' own times do not show. An error when
// the kernel has no pressure-stall information (before Linux 4.20, or
// psi=0).
func CPUPressure() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, err
	}
	return parseCPUPressure(string(raw))
}

// PressurePct is the CPU pressure's growth from start to end as a
// percentage of wall, the time between the two reads: nil when either read
// failed (negative) or wall is not positive. The reads come microseconds
// after their clock readings, so a saturated machine may show a hair over
// the wall time; the share is capped at 100.
func PressurePct(start, end, wall time.Duration) *float64 {
	if start < 0 || end < start || wall <= 0 {
		return nil
	}
	return Float(min(100, 100*float64(end-start)/float64(wall)))
}

// parseCPUPressure reads the "some" line's total= (microseconds) of a
// /proc/pressure/cpu text, e.g.
//
//	some avg10=7.89 avg60=28.32 avg300=50.97 total=1911105827
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
func parseCPUPressure(raw string) (time.Duration, error) {
	for line := range strings.Lines(raw) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			v, ok := strings.CutPrefix(kv, "total=")
			if !ok {
				continue
			}
			us, err := strconv.ParseUint(v, 10, 63)
			if err != nil {
				return 0, fmt.Errorf("cpu pressure total %q: %w", v, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
		return 0, fmt.Errorf("cpu pressure: no total in %q", strings.TrimSpace(line))
	}
	return 0, fmt.Errorf("cpu pressure: no \"some\" line")
}
