package storage_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/storage"
)

func TestPutGetRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)

	for _, size := range []int{1 << 10, 30 << 10, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			t.Parallel()
			body := randomBytes(size)
			key := storage.PayloadKey(time.Now(), fmt.Sprintf("msg-%d", size))

			obj, err := s.Put(t.Context(), key, body)
			require.NoError(t, err)
			sum := sha256.Sum256(body)
			require.Equal(t, storage.Object{Key: key, Size: int64(size), SHA256: hex.EncodeToString(sum[:])}, obj)

			got, err := s.Get(t.Context(), key)
			require.NoError(t, err)
			require.Equal(t, body, got)
		})
	}
}

func TestPutOverwrites(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)

	_, err := s.Put(t.Context(), "k", []byte("first"))
	require.NoError(t, err)
	_, err = s.Put(t.Context(), "k", []byte("second"))
	require.NoError(t, err)

	got, err := s.Get(t.Context(), "k")
	require.NoError(t, err)
	require.Equal(t, "second", string(got))
}

func TestGetMissing(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)

	_, err := s.Get(t.Context(), "payloads/2026/01/02/nope")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorContains(t, err, "payloads/2026/01/02/nope")
}

func TestDelete(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)

	_, err := s.Put(t.Context(), "k", []byte("x"))
	require.NoError(t, err)
	require.NoError(t, s.Delete(t.Context(), "k"))

	_, err = s.Get(t.Context(), "k")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NoError(t, s.Delete(t.Context(), "k"), "deleting a missing object")
}

func TestDeletePrefix(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)

	day1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	// More than one page (1000 keys) of the first day.
	const n1, n2 = 1203, 5
	putMany(t, s, day1, n1)
	putMany(t, s, day2, n2)
	_, err := s.Put(t.Context(), "other/"+storage.DayPrefix(day1)+"x", []byte("x"))
	require.NoError(t, err)

	deleted, err := s.DeletePrefix(t.Context(), storage.DayPrefix(day1))
	require.NoError(t, err)
	require.Equal(t, n1, deleted)

	_, err = s.Get(t.Context(), storage.PayloadKey(day1, "m0"))
	require.ErrorIs(t, err, storage.ErrNotFound)
	for i := range n2 {
		_, err := s.Get(t.Context(), storage.PayloadKey(day2, fmt.Sprintf("m%d", i)))
		require.NoError(t, err)
	}
	_, err = s.Get(t.Context(), "other/"+storage.DayPrefix(day1)+"x")
	require.NoError(t, err)

	deleted, err = s.DeletePrefix(t.Context(), storage.DayPrefix(day1))
	require.NoError(t, err)
	require.Zero(t, deleted, "second pass finds nothing")
}

// putMany stores n small payloads received on day, keyed m0..m<n-1>.
func putMany(t *testing.T, s *storage.Store, day time.Time, n int) {
	t.Helper()
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if _, err := s.Put(t.Context(), storage.PayloadKey(day, fmt.Sprintf("m%d", i)), []byte("{}")); err != nil {
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
}

func TestPresign(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	body := randomBytes(30 << 10)
	key := storage.PayloadKey(time.Now(), "presigned")
	_, err := s.Put(t.Context(), key, body)
	require.NoError(t, err)

	u, err := s.Presign(t.Context(), key, 24*time.Hour)
	require.NoError(t, err)
	require.Contains(t, u, "X-Amz-Signature=")
	require.Contains(t, u, "X-Amz-Expires=86400")

	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, body, got)
}

func TestPresignRejectsBadTTL(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	for _, ttl := range []time.Duration{0, -time.Second, 8 * 24 * time.Hour} {
		_, err := s.Presign(t.Context(), "k", ttl)
		require.Error(t, err, ttl)
	}
}

func TestEnsureBucket(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	s := newStore(t, e.Config())

	require.Error(t, s.Ping(t.Context()), "no bucket yet")
	require.NoError(t, s.EnsureBucket(t.Context()))
	require.NoError(t, s.EnsureBucket(t.Context()), "second call")
	require.NoError(t, s.Ping(t.Context()))
}

func TestEnsureBucketRace(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())

	// Separate stores stand for separate processes starting together.
	const racers = 8
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		s := newStore(t, e.Config())
		wg.Go(func() {
			<-start
			errs[i] = s.EnsureBucket(t.Context())
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestServerDown(t *testing.T) {
	t.Parallel()
	s, e := setup(t)
	_, err := s.Put(t.Context(), "before", []byte("x"))
	require.NoError(t, err)

	require.NoError(t, e.Close())

	start := time.Now()
	_, err = s.Put(t.Context(), "after", []byte("x"))
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "s3 put after: "), err.Error())
	require.Less(t, time.Since(start), 3*time.Second)

	require.Error(t, s.Ping(t.Context()))
	_, err = s.Get(t.Context(), "before")
	require.Error(t, err)
	require.NotErrorIs(t, err, storage.ErrNotFound)
}
