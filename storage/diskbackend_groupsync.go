package storage

import (
	"sync"
	"sync/atomic"
)

// groupSyncer syncs directories for many writers at once: one fsync of a
// directory, started after a writer's rename into it, makes that rename
// durable, so writers renaming into a directory while another one syncs it
// share the next fsync instead of queueing one each.
type groupSyncer struct {
	// mu guards dirs.
	mu   sync.Mutex
	dirs map[string]*dirSyncState
}

// dirSyncState is the sync state of one directory.
type dirSyncState struct {
	// requested counts the renames into the directory.
	requested atomic.Uint64
	// mu is held while syncing and guards synced.
	mu sync.Mutex
	// synced is the value of requested when the last successful fsync
	// started: those renames are durable.
	synced uint64
}

// sync returns once the directory at path has been synced after the caller's
// rename into it.
func (g *groupSyncer) sync(path string) error {
	g.mu.Lock()
	if g.dirs == nil {
		g.dirs = make(map[string]*dirSyncState)
	}
	st, ok := g.dirs[path]
	if !ok {
		st = &dirSyncState{}
		g.dirs[path] = st
	}
	g.mu.Unlock()

	ticket := st.requested.Add(1)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.synced >= ticket {
		return nil // an fsync that started after our rename is done
	}
	covered := st.requested.Load()
	if err := syncDir(path); err != nil {
		return err
	}
	st.synced = covered
	return nil
}

// forget drops the state of the directory at path, which was removed.
func (g *groupSyncer) forget(path string) {
	g.mu.Lock()
	delete(g.dirs, path)
	g.mu.Unlock()
}
