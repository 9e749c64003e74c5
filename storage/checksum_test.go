package storage_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/storage"
)

// The embedded server cannot be made to corrupt data, so a server that
// answers every request with a body not matching its checksum header plays
// a faulty S3 here.
func TestGetRejectsCorruptBody(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("stored payload"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Checksum-Sha256", base64.StdEncoding.EncodeToString(sum[:]))
		_, _ = w.Write([]byte("damaged payload"))
	}))
	t.Cleanup(srv.Close)
	s := newStore(t, storage.Config{Endpoint: srv.URL, AccessKey: "a", SecretKey: "b", UsePathStyle: true})

	_, err := s.Get(t.Context(), "k")
	require.ErrorContains(t, err, "checksum did not match")
}
