package storage_test

import (
	"crypto/rand"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/storage"
)

// startEmbedded starts an embedded server on a free loopback port, serving
// dir, logging warnings into the test's output, and closes it when the test
// ends.
func startEmbedded(t *testing.T, dir string) *storage.Embedded {
	t.Helper()
	return testenv.StartS3(t, testenv.Logger(t, slog.LevelWarn), "127.0.0.1:0", dir)
}

// newStore returns a Store for cfg, closed when the test ends.
func newStore(t *testing.T, cfg storage.Config) *storage.Store {
	t.Helper()
	s, err := storage.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// setup starts an embedded server in a fresh directory and returns a Store
// on it whose bucket exists.
func setup(t *testing.T) (*storage.Store, *storage.Embedded) {
	t.Helper()
	e := startEmbedded(t, t.TempDir())
	return testenv.Payloads(t, e), e
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
