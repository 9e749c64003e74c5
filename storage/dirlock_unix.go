//go:build unix

package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// errDirLocked says another process holds a data directory's lock.
var errDirLocked = errors.New("locked by another process")

// lockDir takes an exclusive flock on the file at path, creating it if needed,
// waiting up to timeout for another holder to let go. The kernel drops the lock
// when the process dies, so a crash never leaves the directory locked.
func lockDir(path string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s: %w", path, errDirLocked)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
