// Package logtest holds what tests need to read what a running component
// logs.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for a logger's concurrent writes while a
// test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
