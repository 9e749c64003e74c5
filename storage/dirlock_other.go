//go:build !unix

package storage

import (
	"errors"
	"os"
	"time"
)

// lockDir is only implemented on Unix: without a lock two processes could
// serve one directory and overwrite each other's objects.
func lockDir(path string, timeout time.Duration) (*os.File, error) {
	return nil, errors.New("embedded s3 store: directory locking is only supported on Unix")
}
