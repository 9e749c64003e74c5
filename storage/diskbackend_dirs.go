package storage

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// joinPath returns dir with the key components parts appended.
func joinPath(dir string, parts []string) string {
	return filepath.Join(append([]string{dir}, parts...)...)
}

// makeDirs makes the directories parts below the bucket directory dir, each
// inside the one before, those missing, for the object key. A concurrent
// DELETE may remove an empty one meanwhile: the rename into it then fails and
// PutObject calls makeDirs again.
func (b *diskBackend) makeDirs(bucket, dir, key string, parts []string) error {
	path := dir
	for _, p := range parts {
		path = filepath.Join(path, p)
		err := os.Mkdir(path, 0o700)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrExist):
			if fi, err := os.Lstat(path); err == nil && !fi.IsDir() {
				return keyConflict(key)
			}
		case errors.Is(err, fs.ErrNotExist):
			// Removed meanwhile, unless the bucket is gone.
			_, err := b.bucketDir(bucket)
			return err
		case isNotDir(err):
			return keyConflict(key)
		default:
			return err
		}
	}
	return nil
}

// syncDirs makes an object just renamed into the directory parts below the
// bucket directory dir durable: it syncs that directory, and the parent of
// each directory on the way whose own entry may not be on disk yet.
func (b *diskBackend) syncDirs(dir string, parts []string) error {
	if err := b.dirSyncs.sync(joinPath(dir, parts)); err != nil {
		return err
	}
	paths := make([]string, 0, len(parts)+1)
	paths = append(paths, dir)
	for i := range parts {
		paths = append(paths, joinPath(dir, parts[:i+1]))
	}

	b.dirMu.RLock()
	missing := slices.ContainsFunc(paths, func(p string) bool {
		_, ok := b.synced[p]
		return !ok
	})
	b.dirMu.RUnlock()
	if !missing {
		return nil
	}

	// Under the write lock no directory is removed, so the ones on the
	// way still hold the object and are the ones that are synced.
	b.dirMu.Lock()
	defer b.dirMu.Unlock()
	for _, p := range paths {
		if _, ok := b.synced[p]; ok {
			continue
		}
		if err := syncDir(filepath.Dir(p)); err != nil {
			return err
		}
		b.synced[p] = struct{}{}
	}
	return nil
}

// pruneDirs removes the directories dirs below the bucket directory bucketDir,
// and their parents below it, as far as they are empty, so that deleted days
// leave no directories behind.
func (b *diskBackend) pruneDirs(bucketDir string, dirs []string) {
	// Deepest first, so a parent is tried after its children.
	slices.SortFunc(dirs, func(x, y string) int { return cmp.Compare(len(y), len(x)) })
	b.dirMu.Lock()
	defer b.dirMu.Unlock()
	inside := bucketDir + string(filepath.Separator)
	for _, d := range dirs {
		for strings.HasPrefix(d, inside) {
			// Remove fails on a directory that is not empty: a file
			// renamed into it is safe.
			if err := os.Remove(d); err != nil {
				break
			}
			delete(b.synced, d)
			b.dirSyncs.forget(d)
			d = filepath.Dir(d)
		}
	}
}

// isNotDir reports whether err says a path component is not a directory.
func isNotDir(err error) bool {
	return errors.Is(err, syscall.ENOTDIR)
}

// isDirErr reports whether err says a path is a directory.
func isDirErr(err error) bool {
	return errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTEMPTY)
}
