//go:build faults

package faults

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// badMerchant is a merchant server whose paths misbehave:
//
//	/hang      reads the request and never answers (until the client gives up)
//	/reset     closes the connection with a TCP reset, no answer
//	/slow      answers 200 after 3 s
//	/flaky     answers 500 every other request, else 200
//	/redirect  answers 302 to /landed (a client following it would land there)
//	/huge      answers 200 with an 8 MiB body
type badMerchant struct {
	srv    *http.Server
	ln     net.Listener
	wg     sync.WaitGroup
	quit   chan struct{}
	hits   sync.Map // path → *atomic.Int64
	landed atomic.Int64
}

func startBadMerchant(t testing.TB) *badMerchant {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &badMerchant{ln: ln, quit: make(chan struct{})}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = b.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		close(b.quit)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if b.srv.Shutdown(ctx) != nil {
			_ = b.srv.Close()
		}
		b.wg.Wait()
	})
	return b
}

// URL returns the URL of path on the server.
func (b *badMerchant) URL(path string) string { return "http://" + b.ln.Addr().String() + path }

// Hits returns how many requests path received.
func (b *badMerchant) Hits(path string) int64 {
	v, ok := b.hits.Load(path)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

func (b *badMerchant) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, _ := b.hits.LoadOrStore(r.URL.Path, new(atomic.Int64))
	n := v.(*atomic.Int64).Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	switch r.URL.Path {
	case "/hang":
		select {
		case <-r.Context().Done():
		case <-b.quit:
		}
	case "/reset":
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("no hijacker")
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST
		}
		conn.Close()
	case "/slow":
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
			return
		case <-b.quit:
			return
		}
		w.WriteHeader(http.StatusOK)
	case "/flaky":
		if n%2 == 0 {
			http.Error(w, "flaky", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	case "/redirect":
		http.Redirect(w, r, "/landed", http.StatusFound)
	case "/landed":
		b.landed.Add(1)
		w.WriteHeader(http.StatusOK)
	case "/huge":
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		bw := bufio.NewWriterSize(w, 64<<10)
		chunk := strings.Repeat("z", 64<<10)
		for range 128 { // 8 MiB
			if _, err := bw.WriteString(chunk); err != nil {
				return
			}
		}
		_ = bw.Flush()
	default:
		http.NotFound(w, r)
	}
}
