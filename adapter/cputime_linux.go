package adapter

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU names the CPU-time clock of the calling OS thread, for the
// watchdog to read from another thread while a call (locked to this
// thread) runs. ok is false when the clock cannot be read.
func threadCPU() (clock int32, ok bool) {
	tid := unix.Gettid()
	// The kernel's per-thread CPU clock id: MAKE_THREAD_CPUCLOCK(tid,
	// CPUCLOCK_SCHED) = ^tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED.
	return int32(^tid<<3 | 4 | 2), true
}

// readCPU reads a clock of threadCPU.
func readCPU(clock int32) (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
