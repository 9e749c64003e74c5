package storage_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/storage"
)

func TestEmbeddedConfig(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())

	u, err := url.Parse(e.URL())
	require.NoError(t, err)
	require.Equal(t, "http", u.Scheme)
	require.Equal(t, "127.0.0.1", u.Hostname())
	require.NotEqual(t, "0", u.Port())

	cfg := e.Config()
	require.Equal(t, e.URL(), cfg.Endpoint)
	require.Equal(t, storage.DefaultBucket, cfg.Bucket)
	require.True(t, cfg.UsePathStyle)
	require.NotEmpty(t, cfg.AccessKey)
	require.NotEmpty(t, cfg.SecretKey)
}

func TestEmbeddedPersistsAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := randomBytes(30 << 10)
	key := storage.PayloadKey(time.Now(), "durable")

	first, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.NoError(t, err)
	s1 := newStore(t, first.Config())
	require.NoError(t, s1.EnsureBucket(t.Context()))
	_, err = s1.Put(t.Context(), key, body)
	require.NoError(t, err)
	require.NoError(t, first.Close())
	require.NoError(t, first.Close(), "Close twice")

	second := startEmbedded(t, dir)
	s2 := newStore(t, second.Config())
	require.NoError(t, s2.Ping(t.Context()), "bucket survived")
	got, err := s2.Get(t.Context(), key)
	require.NoError(t, err)
	require.Equal(t, body, got)
}

func TestEmbeddedDirIsExclusive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startEmbedded(t, dir)

	_, err := storage.StartEmbedded(t.Context(), nil, "127.0.0.1:0", dir)
	require.ErrorContains(t, err, "locked by another process")
}

func TestEmbeddedAddrInUse(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	u, err := url.Parse(e.URL())
	require.NoError(t, err)

	_, err = storage.StartEmbedded(t.Context(), nil, u.Host, t.TempDir())
	require.Error(t, err)
}
