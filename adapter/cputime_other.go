//go:build !linux

package adapter

import "time"

// threadCPU: elsewhere than Linux no thread's CPU clock is read, and the
// time limit counts wall-clock time.
func threadCPU() (clock int32, ok bool) { return 0, false }

func readCPU(int32) (time.Duration, bool) { return 0, false }
