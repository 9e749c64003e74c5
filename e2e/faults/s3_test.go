//go:build faults

package faults

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/storage"
)

// s3Server is an S3 store shared by every process of a scenario: the
// storage package's embedded server running in the test process, on a fixed
// address and directory so that it can be taken down and brought back.
type s3Server struct {
	t    testing.TB
	addr string
	dir  string

	mu  sync.Mutex
	emb *storage.Embedded // nil while down; guarded by mu
}

func startS3(t testing.TB) *s3Server {
	t.Helper()
	s := &s3Server{t: t, addr: freeAddr(t), dir: t.TempDir()}
	s.up()
	t.Cleanup(s.down)
	return s
}

// up starts the server (again) on the same address and directory.
func (s *s3Server) up() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emb != nil {
		return
	}
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.emb, err = storage.StartEmbedded(ctx, nil, s.addr, s.dir)
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the port may linger a moment
	}
	if err != nil {
		s.t.Fatalf("start S3 store on %s: %v", s.addr, err)
	}
}

// down closes the server: connections are refused until up.
func (s *s3Server) down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emb == nil {
		return
	}
	if err := s.emb.Close(); err != nil {
		s.t.Logf("close S3 store: %v", err)
	}
	s.emb = nil
}

// env returns the process environment that points a service at this store.
func (s *s3Server) env() map[string]string {
	return map[string]string{
		"HOOKRELAY_S3_ENDPOINT":     "http://" + s.addr,
		"AWS_ACCESS_KEY_ID":         "hookrelay",
		"AWS_SECRET_ACCESS_KEY":     "hookrelay-embedded",
		"AWS_EC2_METADATA_DISABLED": "true",
	}
}
