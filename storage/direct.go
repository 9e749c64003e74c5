package storage

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// errEmbeddedClosed is the error of a direct Put or Get once the Embedded
// the Store is bound to has been closed: the store is down, as it is for
// an HTTP client whose connections are refused.
var errEmbeddedClosed = errors.New("embedded s3: closed")

// checksumHeader is the metadata key under which gofakes3 keeps the
// x-amz-checksum-sha256 header of a PUT and which it serves back on GET and
// HEAD, where the SDK validates the body against it.
const checksumHeader = "X-Amz-Checksum-Sha256"

// NewStore returns a Store on this server's bucket (DefaultBucket and
// DefaultRegion when empty) whose Put and Get skip HTTP and the SDK: they call
// the server's disk backend in this process, which writes the same files with
// the same durability as a PUT over HTTP. Every other call (EnsureBucket,
// Ping, Presign, Delete, DeletePrefix) goes over HTTP as with New. Objects
// written either way are read either way, by this process or by another one
// reaching the server's URL.
//
// Once the Embedded is closed, Put and Get fail, as they would over HTTP.
func (e *Embedded) NewStore(ctx context.Context, bucket, region string) (*Store, error) {
	cfg := e.Config()
	if bucket != "" {
		cfg.Bucket = bucket
	}
	if region != "" {
		cfg.Region = region
	}
	s, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.local = e
	return s, nil
}

// directMeta returns the metadata gofakes3 stores for the SDK's PUT of a body
// with SHA-256 sum at now (the request's x-amz-* headers, Content-Type and
// Last-Modified), so that an object written directly is served over HTTP
// exactly like one written over HTTP, its checksum header included.
func directMeta(sum [sha256.Size]byte, now time.Time) map[string]string {
	now = now.UTC()
	return map[string]string{
		"Content-Type":         "application/octet-stream",
		"Last-Modified":        now.Format(http.TimeFormat),
		checksumHeader:         base64.StdEncoding.EncodeToString(sum[:]),
		"X-Amz-Content-Sha256": hex.EncodeToString(sum[:]),
		"X-Amz-Date":           now.Format("20060102T150405Z"),
	}
}

// acquire holds the server open for a direct call: Close waits for the call
// to release it before it releases the data directory. It fails once the
// server is closed.
func (e *Embedded) acquire() error {
	e.directMu.RLock()
	if e.closed {
		e.directMu.RUnlock()
		return errEmbeddedClosed
	}
	return nil
}

// release ends what acquire started.
func (e *Embedded) release() { e.directMu.RUnlock() }

// putDirect stores body, whose SHA-256 is sum, under key in bucket through
// the disk backend, as gofakes3 does for a PUT. Like a PUT over HTTP it gives
// up after requestTimeout or when ctx ends (see bounded).
func (e *Embedded) putDirect(ctx context.Context, bucket, key string, body []byte, sum [sha256.Size]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// gofakes3 checks this before calling the backend.
	if len(key) > gofakes3.KeySizeLimit {
		return gofakes3.ResourceError(gofakes3.ErrKeyTooLong, key)
	}
	_, err := bounded(ctx, e, func() (struct{}, error) {
		_, err := e.backend.PutObject(bucket, key, directMeta(sum, time.Now()), bytes.NewReader(body), int64(len(body)), nil)
		return struct{}{}, err
	})
	return err
}

// getDirect reads the object under key in bucket through the disk backend
// and verifies it against the checksums stored with it. A missing object is
// gofakes3's NoSuchKey. It gives up as putDirect does.
func (e *Embedded) getDirect(ctx context.Context, bucket, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return bounded(ctx, e, func() ([]byte, error) {
		obj, err := e.backend.GetObject(bucket, key, nil)
		if err != nil {
			return nil, err
		}
		defer obj.Contents.Close()
		body := make([]byte, obj.Size)
		if _, err := io.ReadFull(obj.Contents, body); err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		if err := verifyChecksums(obj.Metadata, body); err != nil {
			return nil, err
		}
		return body, nil
	})
}

// bounded runs op, a call into the disk backend, holding the server open
// (acquire) until op returns, and returns op's result (or acquire's error),
// or an error as soon as ctx ends or requestTimeout passes. File I/O cannot
// be interrupted: a write stuck in fsync on a failing disk finishes (or not)
// on its own, but the caller is not held, as an HTTP client would not be.
func bounded[T any](ctx context.Context, e *Embedded, op func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Here, not in the caller: acquire waits while Close waits for a
		// stuck call, and the caller's wait is bounded below.
		if err := e.acquire(); err != nil {
			done <- result{err: err}
			return
		}
		defer e.release()
		v, err := op()
		done <- result{v, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("embedded s3: gave up waiting for the disk: %w", ctx.Err())
	}
}

// storedChecksums are the S3 checksums an object may carry, by the metadata
// key gofakes3 keeps them under, which the SDK validates on GET and the
// direct Get validates the same way. Store.Put always sends SHA-256; other
// S3 clients default to CRC32.
var storedChecksums = []struct {
	header, algorithm string
	newHash           func() hash.Hash
}{
	{checksumHeader, "SHA256", sha256.New},
	{"X-Amz-Checksum-Crc32", "CRC32", func() hash.Hash { return crc32.NewIEEE() }},
	{"X-Amz-Checksum-Crc32c", "CRC32C", func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) }},
	{"X-Amz-Checksum-Sha1", "SHA1", sha1.New},
}

// verifyChecksums checks body against every checksum in meta it knows.
func verifyChecksums(meta map[string]string, body []byte) error {
	for _, c := range storedChecksums {
		want, ok := meta[c.header]
		if !ok {
			continue
		}
		h := c.newHash()
		_, _ = h.Write(body)
		if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != want {
			// The SDK's words for the same failure over HTTP.
			return fmt.Errorf("checksum did not match: algorithm %s, expect %s, actual %s", c.algorithm, want, got)
		}
	}
	return nil
}
