package ingest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// eofBody is a request body that, like net/http's for a declared length,
// returns io.EOF with the last bytes; Reset rewinds it without allocating.
type eofBody struct{ r bytes.Reader }

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == nil && b.r.Len() == 0 {
		err = io.EOF
	}
	return n, err
}

func (b *eofBody) Close() error { return nil }

// benchBody is a JSON callback body of about size bytes.
func benchBody(size int) []byte {
	return []byte(`{"tracking_no":"SF100","status":"in_transit","pad":"` + strings.Repeat("x", size-52) + `"}`)
}

// benchMaxBody is the body limit of BenchmarkReadBody: the API's default.
const benchMaxBody = 10 << 20

// BenchmarkReadBody measures the callback body's read path: a typical
// callback inline and a large one that is offloaded, each with its declared
// length.
func BenchmarkReadBody(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"1.2KB", 1200}, {"30KB", 30 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			payload := benchBody(bc.size)
			body := &eofBody{}
			req, err := http.NewRequest(http.MethodPost, "/v1/callbacks", nil)
			if err != nil {
				b.Fatal(err)
			}
			req.ContentLength = int64(len(payload))
			req.Body = body
			mem := NewBodyMemory(DefaultMemoryBytes, nil)
			var rb Body
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				body.r.Reset(payload)
				if err := mem.Read(req, benchMaxBody, &rb); err != nil {
					b.Fatal(err)
				}
				if len(rb.Bytes()) != len(payload) {
					b.Fatal(len(rb.Bytes()))
				}
				rb.Free()
			}
		})
	}
}
