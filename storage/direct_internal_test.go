package storage

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDirectGivesUpOnAStuckDisk: a direct Put or Get whose disk call does not
// return (here the key's lock is held, as a write stuck in fsync holds it)
// fails when its context ends, as an HTTP call would time out, instead of
// holding the ingest request or the delivery. The stuck call still finishes
// once the disk does, and Close waits for it.
func TestDirectGivesUpOnAStuckDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, err := StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	s, err := e.NewStore(t.Context(), "", "")
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.EnsureBucket(t.Context()))
	_, err = s.Put(t.Context(), "stuck", []byte("v1"))
	require.NoError(t, err)

	mu := e.backend.keyLock(DefaultBucket, "stuck")
	mu.Lock()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Put(ctx, "stuck", []byte("v2"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "gave up waiting for the disk")
	_, err = s.Get(ctx, "stuck")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second)

	// Other keys are not held up.
	_, err = s.Put(t.Context(), "other", []byte("x"))
	require.NoError(t, err)

	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a disk call was still running")
	case <-time.After(100 * time.Millisecond):
	}
	mu.Unlock()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the disk call finished")
	}

	// The late write landed: a new server on the directory reads v2.
	e2, err := StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	defer func() { require.NoError(t, e2.Close()) }()
	s2, err := e2.NewStore(t.Context(), "", "")
	require.NoError(t, err)
	defer s2.Close()
	got, err := s2.Get(t.Context(), "stuck")
	require.NoError(t, err)
	require.Equal(t, "v2", string(got))
}
