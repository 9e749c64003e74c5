package storage_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/storage"
)

// The crash this store replaced: GETs and PUTs of 30 KB objects, on the same
// key and on different keys, from hundreds of goroutines, while another one
// keeps writing new keys so the store keeps growing.
func TestEmbeddedConcurrentPutGet(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := t.Context()

	// Writers of a shared key put one of its versions; a reader must get
	// one of them whole (Get also checks the body against its checksum).
	const sharedKeys, versions = 4, 4
	shared := make([][][]byte, sharedKeys)
	for k := range shared {
		for range versions {
			shared[k] = append(shared[k], randomBytes(30<<10))
		}
		_, err := s.Put(ctx, sharedKey(k), shared[k][0])
		require.NoError(t, err)
	}

	stop := make(chan struct{})
	var grower sync.WaitGroup
	var grown atomic.Int64
	grower.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%40)
			if _, err := s.Put(ctx, storage.PayloadKey(day, fmt.Sprintf("grow-%d", i)), randomBytes(30<<10)); err != nil {
				t.Errorf("grow: %v", err)
				return
			}
			grown.Add(1)
		}
	})

	const goroutines, rounds = 200, 5
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				if err := concurrentOp(t, s, shared, g, r); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	grower.Wait()
	require.Positive(t, grown.Load())
}

// sharedKey returns the key that many goroutines overwrite.
func sharedKey(k int) string { return fmt.Sprintf("payloads/2026/11/29/shared-%d", k) }

// concurrentOp is round r of goroutine g: a PUT or GET of a shared key, then
// a PUT and GET of a key of its own.
func concurrentOp(t *testing.T, s *storage.Store, shared [][][]byte, g, r int) error {
	ctx := t.Context()
	k := (g + r) % len(shared)
	if g%2 == 0 {
		if _, err := s.Put(ctx, sharedKey(k), shared[k][(g/2+r)%len(shared[k])]); err != nil {
			return fmt.Errorf("put shared: %w", err)
		}
	} else {
		got, err := s.Get(ctx, sharedKey(k))
		if err != nil {
			return fmt.Errorf("get shared: %w", err)
		}
		if !slices.ContainsFunc(shared[k], func(v []byte) bool { return bytes.Equal(v, got) }) {
			return fmt.Errorf("get shared %d: %d bytes matching no version written", k, len(got))
		}
	}

	own := storage.PayloadKey(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), fmt.Sprintf("g%d-r%d", g, r))
	body := randomBytes(30 << 10)
	if _, err := s.Put(ctx, own, body); err != nil {
		return fmt.Errorf("put own: %w", err)
	}
	got, err := s.Get(ctx, own)
	if err != nil {
		return fmt.Errorf("get own: %w", err)
	}
	if !bytes.Equal(body, got) {
		return fmt.Errorf("get own %s: wrong body", own)
	}
	return nil
}

func TestEmbeddedRangeGet(t *testing.T) {
	t.Parallel()
	s, e := setup(t)
	client := newS3Client(t, e)
	body := randomBytes(30 << 10)
	key := storage.PayloadKey(time.Now(), "ranged")
	_, err := s.Put(t.Context(), key, body)
	require.NoError(t, err)

	n := len(body)
	for rng, want := range map[string]struct {
		from, to int // inclusive
	}{
		"bytes=0-0":                       {0, 0},
		"bytes=100-199":                   {100, 199},
		"bytes=30000-":                    {30000, n - 1},
		"bytes=-50":                       {n - 50, n - 1},
		fmt.Sprintf("bytes=%d-", n-1):     {n - 1, n - 1},
		fmt.Sprintf("bytes=1000-%d", n+5): {1000, n - 1}, // clipped to the end
	} {
		out, err := client.GetObject(t.Context(), &s3.GetObjectInput{
			Bucket: aws.String(storage.DefaultBucket),
			Key:    aws.String(key),
			Range:  aws.String(rng),
		})
		require.NoError(t, err, rng)
		got, err := io.ReadAll(out.Body)
		require.NoError(t, out.Body.Close())
		require.NoError(t, err, rng)
		require.Equal(t, body[want.from:want.to+1], got, rng)
		require.Equal(t, fmt.Sprintf("bytes %d-%d/%d", want.from, want.to, n), aws.ToString(out.ContentRange), rng)
		require.Equal(t, int64(want.to-want.from+1), aws.ToInt64(out.ContentLength), rng)
	}

	// A range starting past the end is refused.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		e.URL()+"/"+storage.DefaultBucket+"/"+key, nil)
	require.NoError(t, err)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", n))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusRequestedRangeNotSatisfiable, resp.StatusCode)
}

func TestEmbeddedListing(t *testing.T) {
	t.Parallel()
	s, e := setup(t)
	client := newS3Client(t, e)

	// Keys whose S3 order differs from a plain walk of the directories:
	// "-" and "." sort before "/", so "a-b" and "a.b" come before "a/...".
	keys := []string{
		"a", "a-b", "a.b", "a0", "ab/c", "b",
		"c/a-b", "c/a.b/x", "c/a/1", "c/a/2/z", "c/a0",
		"payloads/2026/03/01/1", "payloads/2026/03/01/10", "payloads/2026/03/01/2",
		"payloads/2026/03/02/1", "payloads/2026/03/10/1", "payloads/2026/04/01/1",
		"z~", "Z",
	}
	for _, k := range keys {
		_, err := s.Put(t.Context(), k, []byte(k))
		require.NoError(t, err, k)
	}
	sorted := slices.Sorted(slices.Values(keys))

	for _, tc := range []struct {
		prefix, startAfter string
	}{
		{"", ""},
		{"c/", ""},
		{"c/a", ""},
		{"c/a/", ""},
		{"payloads/2026/03/", ""},
		{"payloads/2026/03/0", ""},
		{"payloads/2026/03/01/", ""},
		{"payloads/2026/03/01/1", ""},
		{"payloads/2026/0", "payloads/2026/03/01/2"},
		{"", "c/a.b/x"},
		{"", "c/a"},
		{"", "payloads/"},
		{"nope/", ""},
		{"a//", ""},
		{"../", ""},
	} {
		var want []string
		for _, k := range sorted {
			if strings.HasPrefix(k, tc.prefix) && k > tc.startAfter {
				want = append(want, k)
			}
		}
		for _, pageSize := range []int32{1, 2, 3, 1000} {
			got := listKeys(t, client, tc.prefix, tc.startAfter, pageSize)
			require.Equal(t, want, got, "prefix %q after %q page %d", tc.prefix, tc.startAfter, pageSize)
		}
	}

	// With a delimiter, keys below the next "/" roll up into common
	// prefixes, which count towards the page size.
	for _, pageSize := range []int32{1, 2, 1000} {
		var got []string
		pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{
			Bucket:    aws.String(storage.DefaultBucket),
			Prefix:    aws.String("c/"),
			Delimiter: aws.String("/"),
			MaxKeys:   aws.Int32(pageSize),
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(t.Context())
			require.NoError(t, err)
			for _, o := range page.Contents {
				got = append(got, aws.ToString(o.Key))
			}
			for _, p := range page.CommonPrefixes {
				got = append(got, aws.ToString(p.Prefix))
			}
		}
		slices.Sort(got)
		require.Equal(t, []string{"c/a-b", "c/a.b/", "c/a/", "c/a0"}, got, "page %d", pageSize)
	}

	// Listed objects carry their size and ETag.
	out, err := client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{
		Bucket: aws.String(storage.DefaultBucket),
		Prefix: aws.String("c/a/2/"),
	})
	require.NoError(t, err)
	require.Len(t, out.Contents, 1)
	require.Equal(t, int64(len("c/a/2/z")), aws.ToInt64(out.Contents[0].Size))
	sum := md5.Sum([]byte("c/a/2/z"))
	require.Equal(t, `"`+hex.EncodeToString(sum[:])+`"`, aws.ToString(out.Contents[0].ETag), "MD5 of the body")
	require.WithinDuration(t, time.Now(), aws.ToTime(out.Contents[0].LastModified), time.Minute)
}

// listKeys lists every key under prefix after startAfter, pageSize at a time.
func listKeys(t *testing.T, client *s3.Client, prefix, startAfter string, pageSize int32) []string {
	t.Helper()
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(storage.DefaultBucket),
		Prefix:  aws.String(prefix),
		MaxKeys: aws.Int32(pageSize),
	}
	if startAfter != "" {
		in.StartAfter = aws.String(startAfter)
	}
	var keys []string
	pages := s3.NewListObjectsV2Paginator(client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Contents), int(pageSize))
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

func TestEmbeddedRefusesBadKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := startEmbedded(t, dir)
	s := newStore(t, e.Config())
	require.NoError(t, s.EnsureBucket(t.Context()))

	for _, key := range []string{
		"../escape",
		"a/../../escape",
		"a/./b",
		"a//b",
		"/absolute",
		"trailing/",
		"..",
		".",
		"nul\x00byte",
		strings.Repeat("x", 256),
	} {
		_, err := s.Put(t.Context(), key, []byte("x"))
		require.Error(t, err, "%q", key)
		_, err = s.Get(t.Context(), key)
		require.Error(t, err, "%q", key)
		require.NoError(t, s.Delete(t.Context(), key), "%q: deleting what cannot exist", key)
	}
	// Nothing was written outside the bucket.
	var found []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, path)
		found = append(found, rel)
		return err
	}))
	require.ElementsMatch(t, []string{".", ".lock", ".tmp", storage.DefaultBucket}, found)

	// One key cannot be both an object and a directory of others.
	_, err := s.Put(t.Context(), "x", []byte("x"))
	require.NoError(t, err)
	_, err = s.Put(t.Context(), "x/y", []byte("x"))
	require.Error(t, err)
	_, err = s.Put(t.Context(), "p/q", []byte("x"))
	require.NoError(t, err)
	_, err = s.Put(t.Context(), "p", []byte("x"))
	require.Error(t, err)
	_, err = s.Get(t.Context(), "p")
	require.ErrorIs(t, err, storage.ErrNotFound)
	got, err := s.Get(t.Context(), "p/q")
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

func TestEmbeddedConditionalPut(t *testing.T) {
	t.Parallel()
	_, e := setup(t)
	client := newS3Client(t, e)

	// Of racing creators with If-None-Match: *, exactly one wins.
	const racers = 16
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			_, err := client.PutObject(t.Context(), &s3.PutObjectInput{
				Bucket:      aws.String(storage.DefaultBucket),
				Key:         aws.String("payloads/once"),
				Body:        strings.NewReader(fmt.Sprint(i)),
				IfNoneMatch: aws.String("*"),
			})
			if err == nil {
				wins.Add(1)
			} else if !strings.Contains(err.Error(), "PreconditionFailed") {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), wins.Load())

	head, err := client.HeadObject(t.Context(), &s3.HeadObjectInput{
		Bucket: aws.String(storage.DefaultBucket),
		Key:    aws.String("payloads/once"),
	})
	require.NoError(t, err)
	_, err = client.PutObject(t.Context(), &s3.PutObjectInput{
		Bucket:  aws.String(storage.DefaultBucket),
		Key:     aws.String("payloads/once"),
		Body:    strings.NewReader("stale"),
		IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`),
	})
	require.ErrorContains(t, err, "PreconditionFailed")
	_, err = client.PutObject(t.Context(), &s3.PutObjectInput{
		Bucket:  aws.String(storage.DefaultBucket),
		Key:     aws.String("payloads/once"),
		Body:    strings.NewReader("fresh"),
		IfMatch: head.ETag,
	})
	require.NoError(t, err)
}

func TestEmbeddedRestartKeepsObjectsAndDeletes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	bodies := map[string][]byte{}
	for i := range 20 {
		bodies[storage.PayloadKey(day.AddDate(0, 0, i%3), fmt.Sprint(i))] = randomBytes(1 + i*1000)
	}

	first, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	s1 := newStore(t, first.Config())
	require.NoError(t, s1.EnsureBucket(t.Context()))
	for k, b := range bodies {
		_, err := s1.Put(t.Context(), k, b)
		require.NoError(t, err)
	}
	n, err := s1.DeletePrefix(t.Context(), storage.DayPrefix(day))
	require.NoError(t, err)
	require.Equal(t, 7, n)
	require.NoDirExists(t, filepath.Join(dir, storage.DefaultBucket, "payloads/2026/11/29"), "emptied day removed")
	require.NoError(t, first.Close())

	second := startEmbedded(t, dir)
	s2 := newStore(t, second.Config())
	for k, b := range bodies {
		got, err := s2.Get(t.Context(), k)
		if strings.HasPrefix(k, storage.DayPrefix(day)) {
			require.ErrorIs(t, err, storage.ErrNotFound, k)
			continue
		}
		require.NoError(t, err, k)
		require.Equal(t, b, got, k)
	}
}

// A crash while writing leaves a torn temporary file. It is never served or
// listed, and start-up deletes it.
func TestEmbeddedCleansTornTempFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	s1 := newStore(t, first.Config())
	require.NoError(t, s1.EnsureBucket(t.Context()))
	_, err = s1.Put(t.Context(), "payloads/kept", []byte("kept"))
	require.NoError(t, err)

	torn := filepath.Join(dir, ".tmp", "put-123456")
	require.NoError(t, os.WriteFile(torn, []byte("HRS3OB\x00\x01 half an obj"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".tmp", "bucket-1", "x"), 0o700))
	keys := listKeys(t, newS3Client(t, first), "", "", 1000)
	require.Equal(t, []string{"payloads/kept"}, keys, "temporary files are not listed")
	require.NoError(t, first.Close())

	second := startEmbedded(t, dir)
	entries, err := os.ReadDir(filepath.Join(dir, ".tmp"))
	require.NoError(t, err)
	require.Empty(t, entries)
	got, err := newStore(t, second.Config()).Get(t.Context(), "payloads/kept")
	require.NoError(t, err)
	require.Equal(t, "kept", string(got))
}

func TestEmbeddedRefusesLegacyBoltFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s3.bolt"), []byte("old"), 0o600))
	_, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.ErrorContains(t, err, "s3.bolt")
	require.False(t, errors.Is(err, os.ErrNotExist))

	// The lock was released: once the file is moved away it starts.
	require.NoError(t, os.Rename(filepath.Join(dir, "s3.bolt"), filepath.Join(t.TempDir(), "s3.bolt")))
	startEmbedded(t, dir)
}

// BenchmarkEmbeddedPutGet30KB measures a PUT then a GET of a 30 KB payload
// over loopback HTTP, each PUT synced to disk.
func BenchmarkEmbeddedPutGet30KB(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(fmt.Sprintf("parallel=%v", parallel), func(b *testing.B) {
			e, err := storage.StartEmbedded(b.Context(), nil, "127.0.0.1:0", b.TempDir())
			require.NoError(b, err)
			defer func() { require.NoError(b, e.Close()) }()
			s, err := storage.New(b.Context(), e.Config())
			require.NoError(b, err)
			defer s.Close()
			require.NoError(b, s.EnsureBucket(b.Context()))
			body := randomBytes(30 << 10)
			day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			var seq atomic.Int64

			op := func() error {
				key := storage.PayloadKey(day, fmt.Sprint(seq.Add(1)))
				if _, err := s.Put(b.Context(), key, body); err != nil {
					return err
				}
				got, err := s.Get(b.Context(), key)
				if err == nil && len(got) != len(body) {
					err = errors.New("short body")
				}
				return err
			}
			b.SetBytes(int64(2 * len(body)))
			b.ResetTimer()
			if parallel {
				b.SetParallelism(4) // 4 × GOMAXPROCS clients
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := op(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					require.NoError(b, op())
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// The metadata of an object, Store's SHA-256 checksum above all, comes back
// with it, after a restart too.
func TestEmbeddedKeepsMetadata(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := []byte(`{"tracking_no":"1Z"}`)
	sum := sha256.Sum256(body)
	checksum := base64.StdEncoding.EncodeToString(sum[:])

	first, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	require.NoError(t, newStore(t, first.Config()).EnsureBucket(t.Context()))
	_, err = newS3Client(t, first).PutObject(t.Context(), &s3.PutObjectInput{
		Bucket:         aws.String(storage.DefaultBucket),
		Key:            aws.String("payloads/2026/11/29/meta"),
		Body:           bytes.NewReader(body),
		ChecksumSHA256: aws.String(checksum),
		ContentType:    aws.String("application/json"),
		Metadata:       map[string]string{"carrier": "acme"},
	})
	require.NoError(t, err)
	require.NoError(t, first.Close())

	second := startEmbedded(t, dir)
	out, err := newS3Client(t, second).GetObject(t.Context(), &s3.GetObjectInput{
		Bucket:       aws.String(storage.DefaultBucket),
		Key:          aws.String("payloads/2026/11/29/meta"),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	require.NoError(t, err)
	got, err := io.ReadAll(out.Body)
	require.NoError(t, out.Body.Close())
	require.NoError(t, err)
	require.Equal(t, body, got)
	require.Equal(t, checksum, aws.ToString(out.ChecksumSHA256))
	require.Equal(t, "application/json", aws.ToString(out.ContentType))
	require.Equal(t, map[string]string{"carrier": "acme"}, out.Metadata)
	md := md5.Sum(body)
	require.Equal(t, `"`+hex.EncodeToString(md[:])+`"`, aws.ToString(out.ETag))
}
