package storage

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// An object file is a header followed by the object's bytes:
//
//	magic    8 bytes  objectMagic
//	size     uint64   length of the object's bytes
//	md5      16 bytes MD5 of the object's bytes, its ETag
//	modified int64    Unix nanoseconds of the PUT
//	metaLen  uint32   length of meta
//	meta     JSON object of the metadata headers gofakes3 passed to PutObject
//	contents size bytes
//
// Integers are big-endian. The file's length must be exactly the header's
// plus size: anything else is a damaged file, never served.
const (
	objectMagic     = "HRS3OB\x00\x01"
	objectFixedSize = 8 + 8 + md5.Size + 8 + 4
	// maxObjectMeta bounds the metadata read back; gofakes3 limits what
	// it accepts to far less.
	maxObjectMeta = 1 << 20
)

// objectHeader is the decoded header of an object file.
type objectHeader struct {
	size     int64
	md5      [md5.Size]byte
	modified time.Time
	meta     map[string]string
	// dataOffset is where the object's bytes start in the file.
	dataOffset int64
}

// readObjectHeader reads and checks the header of the object file f, of
// length fileSize.
func readObjectHeader(f io.ReaderAt, fileSize int64) (objectHeader, error) {
	var fixed [objectFixedSize]byte
	if _, err := f.ReadAt(fixed[:], 0); err != nil {
		return objectHeader{}, fmt.Errorf("read object header: %w", err)
	}
	if string(fixed[:8]) != objectMagic {
		return objectHeader{}, errors.New("not an object file")
	}
	var h objectHeader
	size := binary.BigEndian.Uint64(fixed[8:16])
	copy(h.md5[:], fixed[16:32])
	h.modified = time.Unix(0, int64(binary.BigEndian.Uint64(fixed[32:40]))).UTC()
	metaLen := binary.BigEndian.Uint32(fixed[40:44])
	if metaLen > maxObjectMeta {
		return objectHeader{}, fmt.Errorf("object metadata of %d bytes", metaLen)
	}
	h.dataOffset = objectFixedSize + int64(metaLen)
	if size > uint64(fileSize) || h.dataOffset+int64(size) != fileSize {
		return objectHeader{}, fmt.Errorf("object file of %d bytes for %d bytes of header and %d of contents",
			fileSize, h.dataOffset, size)
	}
	h.size = int64(size)
	meta := make([]byte, metaLen)
	if _, err := f.ReadAt(meta, objectFixedSize); err != nil {
		return objectHeader{}, fmt.Errorf("read object metadata: %w", err)
	}
	if err := json.Unmarshal(meta, &h.meta); err != nil {
		return objectHeader{}, fmt.Errorf("decode object metadata: %w", err)
	}
	return h, nil
}

// openObject opens the object file at path and reads its header. A missing
// file, or a directory, is gofakes3's NoSuchKey.
func openObject(path, key string) (*os.File, objectHeader, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
		return nil, objectHeader{}, gofakes3.KeyNotFound(key)
	}
	if err != nil {
		return nil, objectHeader{}, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, objectHeader{}, gofakes3.KeyNotFound(key)
	}
	var h objectHeader
	if err == nil {
		h, err = readObjectHeader(f, fi.Size())
	}
	if err != nil {
		_ = f.Close()
		return nil, objectHeader{}, fmt.Errorf("object %q: %w", key, err)
	}
	return f, h, nil
}

// objectPath returns the file of key in bucket, checking that both exist as
// far as their names go.
func (b *diskBackend) objectPath(bucket, key string) (string, error) {
	dir, err := b.bucketDir(bucket)
	if err != nil {
		return "", err
	}
	parts, err := keyComponents(key)
	if err != nil {
		// No such key can have been stored.
		return "", gofakes3.KeyNotFound(key)
	}
	return joinPath(dir, parts), nil
}

// GetObject implements gofakes3.Backend. The returned object reads from the
// open file, which a later PUT or DELETE of the key does not change.
func (b *diskBackend) GetObject(bucket, key string, rangeRequest *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	path, err := b.objectPath(bucket, key)
	if err != nil {
		return nil, err
	}
	f, h, err := openObject(path, key)
	if err != nil {
		return nil, err
	}
	rng, err := rangeRequest.Range(h.size)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	start, length := int64(0), h.size
	if rng != nil {
		start, length = rng.Start, rng.Length
	}
	return &gofakes3.Object{
		Name:     key,
		Metadata: h.meta,
		Size:     h.size,
		Contents: &fileSection{SectionReader: io.NewSectionReader(f, h.dataOffset+start, length), f: f},
		Hash:     h.md5[:],
		Range:    rng,
	}, nil
}

// HeadObject implements gofakes3.Backend.
func (b *diskBackend) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	path, err := b.objectPath(bucket, key)
	if err != nil {
		return nil, err
	}
	f, h, err := openObject(path, key)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &gofakes3.Object{
		Name:     key,
		Metadata: h.meta,
		Size:     h.size,
		Contents: io.NopCloser(bytes.NewReader(nil)),
		Hash:     h.md5[:],
	}, nil
}

// PutObject implements gofakes3.Backend. It replaces the object whole,
// metadata included, as S3 does: carrying the previous object's metadata
// over would keep a checksum that does not match the new bytes.
func (b *diskBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64,
	conditions *gofakes3.PutConditions,
) (gofakes3.PutObjectResult, error) {
	var result gofakes3.PutObjectResult
	dir, err := b.bucketDir(bucket)
	if err != nil {
		return result, err
	}
	parts, err := keyComponents(key)
	if err != nil {
		return result, err
	}
	tmp, err := b.writeTemp(meta, input, size)
	if err != nil {
		return result, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmp)
		}
	}()

	path := joinPath(dir, parts)
	lock := b.keyLock(bucket, key)
	lock.Lock()
	defer lock.Unlock()
	if conditions != nil {
		if err := checkPutConditions(path, key, conditions); err != nil {
			return result, err
		}
	}
	// A concurrent DELETE may remove a directory left empty between
	// making it and renaming into it; make it again then.
	for attempt := 0; ; attempt++ {
		if err := b.makeDirs(bucket, dir, key, parts[:len(parts)-1]); err != nil {
			return result, err
		}
		err = os.Rename(tmp, path)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			break
		}
	}
	if err != nil {
		if isNotDir(err) || errors.Is(err, fs.ErrExist) || isDirErr(err) {
			return result, keyConflict(key)
		}
		return result, err
	}
	committed = true
	return result, b.syncDirs(dir, parts[:len(parts)-1])
}

// writeTemp writes an object file of size bytes read from input to a new
// temporary file, syncs it, and returns its path. input must end after size
// bytes; gofakes3 reports a body failing its Content-MD5 at that end.
func (b *diskBackend) writeTemp(meta map[string]string, input io.Reader, size int64) (path string, err error) {
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(b.tmp, "put-")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()

	var fixed [objectFixedSize]byte
	copy(fixed[:8], objectMagic)
	binary.BigEndian.PutUint64(fixed[32:40], uint64(time.Now().UnixNano()))
	binary.BigEndian.PutUint32(fixed[40:44], uint32(len(metaJSON)))
	w := bufio.NewWriterSize(f, 64<<10)
	_, _ = w.Write(fixed[:])
	_, _ = w.Write(metaJSON)

	sum := md5.New()
	n, err := io.CopyN(io.MultiWriter(w, sum), input, size)
	if errors.Is(err, io.EOF) || n < size {
		return "", gofakes3.ErrIncompleteBody
	}
	if err != nil {
		return "", err
	}
	var extra [1]byte
	switch _, err := io.ReadFull(input, extra[:]); {
	case err == nil:
		return "", gofakes3.ErrIncompleteBody
	case !errors.Is(err, io.EOF):
		return "", err
	}
	if err := w.Flush(); err != nil {
		return "", err
	}

	binary.BigEndian.PutUint64(fixed[8:16], uint64(size))
	copy(fixed[16:32], sum.Sum(nil))
	if _, err := f.WriteAt(fixed[8:32], 8); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// checkPutConditions applies gofakes3's rules for a conditional PUT to the
// object now at path. The caller holds the key's lock.
func checkPutConditions(path, key string, conditions *gofakes3.PutConditions) error {
	info := &gofakes3.ConditionalObjectInfo{}
	f, h, err := openObject(path, key)
	switch {
	case err == nil:
		_ = f.Close()
		info.Exists, info.Hash = true, h.md5[:]
	case !gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey):
		return err
	}
	return gofakes3.CheckPutConditions(conditions, info)
}

// DeleteObject implements gofakes3.Backend. Deleting a missing object
// succeeds.
func (b *diskBackend) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	var result gofakes3.ObjectDeleteResult
	dir, err := b.bucketDir(bucket)
	if err != nil {
		return result, err
	}
	parent, err := b.removeObject(bucket, dir, key)
	if err != nil || parent == "" {
		return result, err
	}
	if err := syncDir(parent); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return result, err
	}
	b.pruneDirs(dir, []string{parent})
	return result, nil
}

// DeleteMulti implements gofakes3.Backend.
func (b *diskBackend) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	var result gofakes3.MultiDeleteResult
	dir, err := b.bucketDir(bucket)
	if err != nil {
		return result, err
	}
	parents := make(map[string]struct{})
	for _, key := range keys {
		parent, err := b.removeObject(bucket, dir, key)
		if err != nil {
			result.Error = append(result.Error, gofakes3.ErrorResult{
				Key:     key,
				Code:    gofakes3.ErrInternal,
				Message: gofakes3.ErrInternal.Message(),
			})
			continue
		}
		if parent != "" {
			parents[parent] = struct{}{}
		}
		result.Deleted = append(result.Deleted, gofakes3.ObjectID{Key: key})
	}
	dirs := make([]string, 0, len(parents))
	for p := range parents {
		if err := syncDir(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return result, err
		}
		dirs = append(dirs, p)
	}
	b.pruneDirs(dir, dirs)
	return result, nil
}

// removeObject deletes the file of key, if any, and returns the directory
// that held it, or "" when there was nothing to delete.
func (b *diskBackend) removeObject(bucket, dir, key string) (string, error) {
	parts, err := keyComponents(key)
	if err != nil {
		return "", nil // never stored
	}
	path := joinPath(dir, parts)
	lock := b.keyLock(bucket, key)
	lock.Lock()
	defer lock.Unlock()
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || isNotDir(err) || (err == nil && fi.IsDir()) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return joinPath(dir, parts[:len(parts)-1]), nil
}

// fileSection reads part of an open file and closes the file.
type fileSection struct {
	*io.SectionReader
	f *os.File
}

// Close closes the file.
func (s *fileSection) Close() error { return s.f.Close() }

// keyConflict is the error for a key that needs a directory where an object
// is, or the reverse: "a/b" cannot be stored beside "a".
func keyConflict(key string) error {
	return gofakes3.ErrorMessage(gofakes3.ErrInvalidArgument,
		fmt.Sprintf("object key %q conflicts with a stored key: one key cannot be both an object and a prefix of others followed by \"/\"", key))
}
