package storage_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/storage"
)

// newDirectStore returns a Store from e.NewStore on the default bucket,
// creating the bucket, and closes it when the test ends.
func newDirectStore(t testing.TB, e *storage.Embedded) *storage.Store {
	t.Helper()
	s, err := e.NewStore(t.Context(), "", "")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, s.EnsureBucket(t.Context()))
	return s
}

// objectFile returns the file of key in the default bucket of the embedded
// server serving dir.
func objectFile(dir, key string) string {
	return filepath.Join(append([]string{dir, storage.DefaultBucket}, strings.Split(key, "/")...)...)
}

// An object written directly is read over HTTP by a separate SDK client, the
// way a dispatch process reads it, and the reverse.
func TestDirectAndHTTPInterchange(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	direct := newDirectStore(t, e)
	remote := newStore(t, e.Config())

	for _, size := range []int{0, 1, 30 << 10, 1 << 20} {
		body := randomBytes(size)
		key := storage.PayloadKey(time.Now(), fmt.Sprintf("direct-%d", size))
		obj, err := direct.Put(t.Context(), key, body)
		require.NoError(t, err)
		want, err := remote.Put(t.Context(), key+"-http", body)
		require.NoError(t, err)
		want.Key = key
		require.Equal(t, want, obj, "same description either way")

		got, err := remote.Get(t.Context(), key)
		require.NoError(t, err, size)
		require.Equal(t, body, got, size)
		got, err = direct.Get(t.Context(), key+"-http")
		require.NoError(t, err, size)
		require.Equal(t, body, got, size)
		got, err = direct.Get(t.Context(), key)
		require.NoError(t, err, size)
		require.Equal(t, body, got, size)
	}
}

// Over HTTP, an object written directly carries what one PUT over HTTP
// does: the SHA-256 checksum the SDK validates, the ETag, the content type.
func TestDirectObjectHeaders(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	direct := newDirectStore(t, e)
	remote := newStore(t, e.Config())
	client := newS3Client(t, e)

	body := randomBytes(30 << 10)
	sum := sha256.Sum256(body)
	_, err := direct.Put(t.Context(), "a/direct", body)
	require.NoError(t, err)
	_, err = remote.Put(t.Context(), "a/http", body)
	require.NoError(t, err)

	get := func(key string) *s3.GetObjectOutput {
		out, err := client.GetObject(t.Context(), &s3.GetObjectInput{
			Bucket:       aws.String(storage.DefaultBucket),
			Key:          aws.String(key),
			ChecksumMode: types.ChecksumModeEnabled,
		})
		require.NoError(t, err)
		require.NoError(t, out.Body.Close())
		return out
	}
	d, h := get("a/direct"), get("a/http")
	require.Equal(t, base64.StdEncoding.EncodeToString(sum[:]), aws.ToString(d.ChecksumSHA256))
	require.Equal(t, aws.ToString(h.ChecksumSHA256), aws.ToString(d.ChecksumSHA256))
	require.Equal(t, aws.ToString(h.ETag), aws.ToString(d.ETag))
	require.Equal(t, aws.ToString(h.ContentType), aws.ToString(d.ContentType))
	require.Equal(t, aws.ToInt64(h.ContentLength), aws.ToInt64(d.ContentLength))
	require.NotNil(t, d.LastModified)
	require.WithinDuration(t, time.Now(), *d.LastModified, time.Minute)
}

// A body damaged on disk fails the direct Get, and the SDK's validation over
// HTTP, against the checksum the direct Put stored.
func TestDirectGetDetectsDamage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := startEmbedded(t, dir)
	direct := newDirectStore(t, e)
	remote := newStore(t, e.Config())

	key := storage.PayloadKey(time.Now(), "damaged")
	_, err := direct.Put(t.Context(), key, randomBytes(30<<10))
	require.NoError(t, err)

	f, err := os.OpenFile(objectFile(dir, key), os.O_RDWR, 0)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	last := make([]byte, 1)
	_, err = f.ReadAt(last, fi.Size()-1)
	require.NoError(t, err)
	last[0] ^= 0xff
	_, err = f.WriteAt(last, fi.Size()-1)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = direct.Get(t.Context(), key)
	require.ErrorContains(t, err, "checksum did not match")
	require.ErrorContains(t, err, key)
	require.NotErrorIs(t, err, storage.ErrNotFound)
	_, err = remote.Get(t.Context(), key)
	require.ErrorContains(t, err, "checksum did not match", "over HTTP too")
}

func TestDirectGetMissing(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	direct := newDirectStore(t, e)

	_, err := direct.Get(t.Context(), "payloads/2026/01/02/nope")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorContains(t, err, "payloads/2026/01/02/nope")

	// A prefix of stored keys is no object either.
	_, err = direct.Put(t.Context(), "payloads/2026/01/02/there", []byte("x"))
	require.NoError(t, err)
	_, err = direct.Get(t.Context(), "payloads/2026/01/02")
	require.ErrorIs(t, err, storage.ErrNotFound)

	require.NoError(t, direct.Delete(t.Context(), "payloads/2026/01/02/there"))
	_, err = direct.Get(t.Context(), "payloads/2026/01/02/there")
	require.ErrorIs(t, err, storage.ErrNotFound, "deleted over HTTP")
}

func TestDirectBadKey(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	direct := newDirectStore(t, e)

	for _, key := range []string{"", "/lead", "a//b", "a/../b", strings.Repeat("k", 1025)} {
		_, err := direct.Put(t.Context(), key, []byte("x"))
		require.Error(t, err, key)
	}
}

func TestDirectNoBucket(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	s, err := e.NewStore(t.Context(), "other-bucket", "")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.Equal(t, "other-bucket", s.Bucket())

	_, err = s.Put(t.Context(), "k", []byte("x"))
	require.Error(t, err, "bucket not created")
	require.NoError(t, s.EnsureBucket(t.Context()))
	_, err = s.Put(t.Context(), "k", []byte("x"))
	require.NoError(t, err)
	got, err := newStore(t, storage.Config{
		Endpoint: e.URL(), Bucket: "other-bucket", AccessKey: "a", SecretKey: "b", UsePathStyle: true,
	}).Get(t.Context(), "k")
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

// A closed server fails direct calls, as connections refused fail HTTP
// ones: ingest answers 503 for it.
func TestDirectServerDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	s := newDirectStore(t, e)
	_, err = s.Put(t.Context(), "before", []byte("x"))
	require.NoError(t, err)

	require.NoError(t, e.Close())

	_, err = s.Put(t.Context(), "after", []byte("x"))
	require.EqualError(t, err, "s3 put after: embedded s3: closed")
	_, err = s.Get(t.Context(), "before")
	require.EqualError(t, err, "s3 get before: embedded s3: closed")
	require.NotErrorIs(t, err, storage.ErrNotFound)
	require.Error(t, s.Ping(t.Context()))
	_, err = os.Stat(objectFile(dir, "after"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written after Close")

	// Another server, which may be another process, takes the directory
	// over and has the object.
	e2 := startEmbedded(t, dir)
	got, err := newDirectStore(t, e2).Get(t.Context(), "before")
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

// Puts racing Close either fail or are on disk for the next server.
func TestDirectCloseDuringPuts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	s := newDirectStore(t, e)

	const workers, each = 8, 40
	stored := make([][]string, workers)
	var wg sync.WaitGroup
	// underWay is closed once a put is on disk: Close comes while the
	// others are in flight.
	underWay := make(chan struct{})
	var once sync.Once
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("c/%d/%d", w, i)
				if _, err := s.Put(t.Context(), key, []byte(key)); err != nil {
					if !strings.Contains(err.Error(), "embedded s3: closed") {
						t.Errorf("put %s: %v", key, err)
					}
					return
				}
				stored[w] = append(stored[w], key)
				once.Do(func() { close(underWay) })
			}
		})
	}
	testenv.WaitFor(t, underWay, 30*time.Second, "the first put")
	require.NoError(t, e.Close())
	wg.Wait()

	s2 := newStore(t, startEmbedded(t, dir).Config())
	for _, keys := range stored {
		for _, key := range keys {
			got, err := s2.Get(t.Context(), key)
			require.NoError(t, err, key)
			require.Equal(t, key, string(got))
		}
	}
}

// Concurrent direct puts of distinct and of shared keys, mixed with HTTP
// puts and gets: every object reads back whole, and each shared key holds
// one of the bodies written to it.
func TestDirectConcurrentPuts(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	direct := newDirectStore(t, e)
	remote := newStore(t, e.Config())
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := storage.PayloadKey(day, fmt.Sprintf("w%d-%d", w, i))
				s := direct
				if i%5 == 0 {
					s = remote
				}
				body := []byte(strings.Repeat(key, 1+i%7))
				if _, err := s.Put(t.Context(), key, body); err != nil {
					errs <- err
					return
				}
				got, err := direct.Get(t.Context(), key)
				if err == nil && string(got) != string(body) {
					err = fmt.Errorf("%s: read back %d bytes, wrote %d", key, len(got), len(body))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for i := range each {
				body := fmt.Appendf(nil, "shared %d %d %s", w, i, randomBytes(100))
				if _, err := direct.Put(t.Context(), "shared/key", body); err != nil {
					errs <- err
					return
				}
				got, err := direct.Get(t.Context(), "shared/key")
				if err == nil && !strings.HasPrefix(string(got), "shared ") {
					err = errors.New("shared key torn")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	n, err := remote.DeletePrefix(t.Context(), storage.DayPrefix(day))
	require.NoError(t, err)
	require.Equal(t, workers*each, n, "every object listed over HTTP")
}

// BenchmarkPut30KB compares Put of a 30 KB payload over loopback HTTP with
// the direct path of Embedded.NewStore. Both sync the file and its directory,
// which dominates on a slow disk; the difference is the CPU and allocations
// of HTTP, gofakes3's request handling and the SDK.
func BenchmarkPut30KB(b *testing.B) {
	body := randomBytes(30 << 10)
	for _, mode := range []string{"http", "direct"} {
		b.Run(mode, func(b *testing.B) {
			e, err := storage.StartEmbedded(b.Context(), nil, "127.0.0.1:0", b.TempDir())
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, e.Close()) })
			var s *storage.Store
			if mode == "direct" {
				s = newDirectStore(b, e)
			} else {
				s, err = storage.New(b.Context(), e.Config())
				require.NoError(b, err)
				b.Cleanup(s.Close)
				require.NoError(b, s.EnsureBucket(b.Context()))
			}
			day := time.Now()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Put(b.Context(), storage.PayloadKey(day, fmt.Sprint(i)), body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
