package storage

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// Names in the data directory. Bucket directories sit beside them; valid
// bucket names never start with ".", so none can collide with these.
const (
	// diskLockFile is flocked by the process serving the directory.
	diskLockFile = ".lock"
	// diskTempDir holds objects being written. A crash leaves at most
	// torn files there, which start-up deletes.
	diskTempDir = ".tmp"
	// legacyBoltFile is where the earlier bbolt store kept every object.
	legacyBoltFile = "s3.bolt"
)

// keyLockStripes is the number of mutexes the keys of all buckets hash onto.
const keyLockStripes = 256

// diskBackend is a gofakes3 backend keeping each object in a file of its own,
// <root>/<bucket>/<key>, a key's "/"-separated components being directories.
//
// An object is written to a temporary file, synced, and renamed over its
// final name, whose directory is then synced: an object whose PUT succeeded
// is on disk, and a reader sees either the previous object or the new one,
// never a mix. Readers hold the file open, so an object replaced or deleted
// while it is being read is still read whole.
type diskBackend struct {
	root string
	tmp  string
	// lock is the flocked lock file, held until Close.
	lock *os.File

	// keyLocks serialise, per key, checking a PUT's conditions with
	// replacing or deleting the object, so a conditional PUT is atomic.
	keyLocks [keyLockStripes]sync.Mutex
	keySeed  maphash.Seed

	// dirMu guards synced and the removal of directories.
	dirMu sync.RWMutex
	// synced holds directories, the bucket directories included, whose
	// entry in their parent is known to be on disk. A directory leaves it
	// only when removed, under dirMu, so it is never stale.
	synced map[string]struct{}
	// dirSyncs syncs the directories objects are renamed into.
	dirSyncs groupSyncer
}

var _ gofakes3.Backend = (*diskBackend)(nil)

// openDiskBackend locks dir, creating it if needed, and deletes what writes
// interrupted by a crash left behind. Only one process at a time may serve a
// directory; another one fails with an error saying it is locked.
func openDiskBackend(dir string, lockTimeout time.Duration) (*diskBackend, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := lockDir(filepath.Join(dir, diskLockFile), lockTimeout)
	if err != nil {
		return nil, err
	}
	b := &diskBackend{
		root:    dir,
		tmp:     filepath.Join(dir, diskTempDir),
		lock:    lock,
		keySeed: maphash.MakeSeed(),
		synced:  make(map[string]struct{}),
	}
	if err := b.init(); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return b, nil
}

// init refuses a directory of the earlier bbolt store and empties the
// temporary directory.
func (b *diskBackend) init() error {
	legacy := filepath.Join(b.root, legacyBoltFile)
	if _, err := os.Lstat(legacy); err == nil {
		return fmt.Errorf("%s holds objects of the earlier bbolt store, which this version does not read: "+
			"move it out of the directory to start with an empty store", legacy)
	}
	if err := os.RemoveAll(b.tmp); err != nil {
		return fmt.Errorf("clean %s: %w", b.tmp, err)
	}
	if err := os.Mkdir(b.tmp, 0o700); err != nil {
		return err
	}
	return syncDir(b.root)
}

// Close releases the directory's lock.
func (b *diskBackend) Close() error {
	// Closing the file drops the flock.
	return b.lock.Close()
}

// keyLock returns the mutex guarding key in bucket.
func (b *diskBackend) keyLock(bucket, key string) *sync.Mutex {
	var h maphash.Hash
	h.SetSeed(b.keySeed)
	_, _ = h.WriteString(bucket)
	_ = h.WriteByte(0)
	_, _ = h.WriteString(key)
	return &b.keyLocks[h.Sum64()%keyLockStripes]
}

// bucketDir returns the directory of an existing bucket, or an error
// satisfying gofakes3's NoSuchBucket.
func (b *diskBackend) bucketDir(name string) (string, error) {
	if validBucket(name) != nil {
		return "", gofakes3.BucketNotFound(name)
	}
	dir := filepath.Join(b.root, name)
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return "", gofakes3.BucketNotFound(name)
	}
	if err != nil {
		return "", err
	}
	return dir, nil
}

// ListBuckets implements gofakes3.Backend.
func (b *diskBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	entries, err := os.ReadDir(b.root)
	if err != nil {
		return nil, err
	}
	var buckets []gofakes3.BucketInfo
	for _, e := range entries {
		if !e.IsDir() || validBucket(e.Name()) != nil {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		buckets = append(buckets, gofakes3.BucketInfo{
			Name:         e.Name(),
			CreationDate: gofakes3.NewContentTime(fi.ModTime()),
		})
	}
	return buckets, nil
}

// CreateBucket implements gofakes3.Backend.
func (b *diskBackend) CreateBucket(name string) error {
	if err := validBucket(name); err != nil {
		return err
	}
	dir := filepath.Join(b.root, name)
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	if err != nil {
		return err
	}
	b.dirMu.Lock()
	defer b.dirMu.Unlock()
	if err := syncDir(b.root); err != nil {
		return err
	}
	b.synced[dir] = struct{}{}
	return nil
}

// BucketExists implements gofakes3.Backend.
func (b *diskBackend) BucketExists(name string) (bool, error) {
	_, err := b.bucketDir(name)
	if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket) {
		return false, nil
	}
	return err == nil, err
}

// DeleteBucket implements gofakes3.Backend.
func (b *diskBackend) DeleteBucket(name string) error {
	dir, err := b.bucketDir(name)
	if err != nil {
		return err
	}
	for _, err := range b.walk(dir, "", "", 1) {
		if err != nil {
			return err
		}
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	return b.removeBucket(name, dir)
}

// ForceDeleteBucket implements gofakes3.Backend.
func (b *diskBackend) ForceDeleteBucket(name string) error {
	dir, err := b.bucketDir(name)
	if err != nil {
		return err
	}
	return b.removeBucket(name, dir)
}

// removeBucket moves the bucket's directory out of sight in one rename, so
// the bucket is gone at once, then deletes it.
func (b *diskBackend) removeBucket(name, dir string) error {
	b.dirMu.Lock()
	defer b.dirMu.Unlock()
	trash, err := os.MkdirTemp(b.tmp, "bucket-")
	if err != nil {
		return err
	}
	if err := os.Rename(dir, filepath.Join(trash, name)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return gofakes3.BucketNotFound(name)
		}
		return err
	}
	for d := range b.synced {
		if d == dir || strings.HasPrefix(d, dir+string(filepath.Separator)) {
			delete(b.synced, d)
		}
	}
	if err := syncDir(b.root); err != nil {
		return err
	}
	return os.RemoveAll(trash)
}

// CopyObject implements gofakes3.Backend by reading the source and writing
// the copy like any other object.
func (b *diskBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(b, srcBucket, srcKey, dstBucket, dstKey, meta)
}

// syncDir fsyncs the directory at path, making the entries added to or
// removed from it durable.
func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
