package ingest

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/httperr"
)

// DefaultMemoryBytes is the default bound of the memory the callback bodies
// in flight hold together (HOOKRELAY_INGEST_MEMORY): 256 MiB.
const DefaultMemoryBytes = 256 << 20

const (
	// firstBodyBuffer is the capacity a body buffer starts with when the
	// pool has none: most callbacks fit.
	firstBodyBuffer = 4 << 10
	// maxPooledBody is the largest buffer kept for reuse; larger ones (rare
	// bodies) go to the garbage collector, so the pool never keeps one
	// request's megabytes.
	maxPooledBody = 64 << 10
	// bodyRetryAfter is the Retry-After of a refusal for memory: bodies in
	// flight are answered within seconds.
	bodyRetryAfter = 2
)

// bodyPool holds body buffers (*[]byte, capacity at most maxPooledBody).
var bodyPool = sync.Pool{New: func() any {
	b := make([]byte, 0, firstBodyBuffer)
	return &b
}}

// BodyMemory reads callback bodies and bounds the memory that the bodies of
// the requests in flight hold: the capacity of their buffers, counted as the
// buffers grow with what arrives.
type BodyMemory struct {
	limit   int64
	held    atomic.Int64
	refused prometheus.Counter
}

// NewBodyMemory returns a BodyMemory of limit bytes; reg receives its
// metrics (may be nil).
func NewBodyMemory(limit int64, reg prometheus.Registerer) *BodyMemory {
	m := &BodyMemory{limit: limit, refused: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hookrelay_ingest_body_memory_refusals_total",
		Help: "Callbacks answered 503 because the bodies in flight held HOOKRELAY_INGEST_MEMORY.",
	})}
	if reg != nil {
		reg.MustRegister(m.refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hookrelay_ingest_body_bytes_in_flight",
			Help: "Bytes held by the buffers of the callback bodies being read or stored (bounded by HOOKRELAY_INGEST_MEMORY).",
		}, func() float64 { return float64(m.held.Load()) }))
	}
	return m
}

// reserve takes n bytes of the bound, or nothing and false when they do
// not fit.
func (m *BodyMemory) reserve(n int64) bool {
	for {
		held := m.held.Load()
		if held+n > m.limit {
			return false
		}
		if m.held.CompareAndSwap(held, held+n) {
			return true
		}
	}
}

func (m *BodyMemory) release(n int64) { m.held.Add(-n) }

// Body is a body read by BodyMemory.Read. Its bytes stay valid, and
// counted against the bound, until Free.
type Body struct {
	mem  *BodyMemory // nil once freed
	buf  *[]byte     // from bodyPool; *buf is the body
	held int64       // bytes of mem reserved for *buf
	// lent marks a buffer that someone other than the request may still be
	// reading (a payload store that gave up waiting): it is not reused.
	lent bool
}

// Bytes returns the body; it is valid until Free.
func (b *Body) Bytes() []byte { return *b.buf }

// Lend marks the body's buffer as one that someone other than the request
// may still be reading (a payload store that gave up waiting): Free does
// not reuse it.
func (b *Body) Lend() { b.lent = true }

// Free releases the body's memory and, unless it was lent, keeps a buffer
// of reasonable size for the next request. It may be called more than once.
func (b *Body) Free() {
	if b.mem == nil {
		return
	}
	b.mem.release(b.held)
	b.mem, b.held = nil, 0
	if !b.lent && cap(*b.buf) <= maxPooledBody {
		*b.buf = (*b.buf)[:0]
		bodyPool.Put(b.buf)
	}
	b.buf = nil
}

// errBodyMemory is the answer when the bodies in flight hold the bound.
func errBodyMemory() error {
	return httperr.WithRetryAfter(hookrelay.Errorf(hookrelay.EUNAVAILABLE,
		"too many callback bodies in flight; retry later"), bodyRetryAfter)
}

// Read reads at most limit bytes of req's body into out; more is ETOOLARGE.
// The buffer grows with what arrives (doubling, at most to the declared
// Content-Length and to limit+1), so a Content-Length that is never sent
// costs nothing; a declared length over limit is refused before reading.
// Each growth first reserves the new buffer against the bound: when it
// does not fit, the request is refused with EUNAVAILABLE (Retry-After)
// and holds nothing. On success the caller frees out (Body.Free).
func (m *BodyMemory) Read(req *http.Request, limit int, out *Body) error {
	tooLarge := func() error { return hookrelay.Errorf(hookrelay.ETOOLARGE, "body larger than %d bytes", limit) }
	if req.ContentLength > int64(limit) {
		return tooLarge()
	}
	bp := bodyPool.Get().(*[]byte)
	buf := (*bp)[:0]
	if !m.reserve(int64(cap(buf))) {
		bodyPool.Put(bp)
		m.refused.Inc()
		return errBodyMemory()
	}
	*out = Body{mem: m, buf: bp, held: int64(cap(buf))}
	fail := func(err error) error {
		*out.buf = buf
		out.Free()
		return err
	}
	// Reading stops at limit+1 bytes: the extra byte tells a body over the
	// limit from one exactly at it.
	end := int64(limit) + 1
	for {
		if int64(len(buf)) >= end {
			return fail(tooLarge())
		}
		if len(buf) == cap(buf) {
			size := max(2*cap(buf), firstBodyBuffer)
			if req.ContentLength > int64(len(buf)) {
				// The declared length only ever shrinks a growth: the
				// +1 leaves room to see the end without growing again.
				size = int(min(int64(size), req.ContentLength+1))
			}
			size = int(min(int64(size), end))
			if !m.reserve(int64(size)) {
				m.refused.Inc()
				return fail(errBodyMemory())
			}
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			// The old buffer is garbage now (a pooled one included).
			m.release(int64(cap(buf)))
			buf = grown
			out.held = int64(size)
		}
		n, err := req.Body.Read(buf[len(buf):min(int64(cap(buf)), end)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(hookrelay.WrapError(hookrelay.EINVALID, "could not read the body", err))
		}
	}
	if int64(len(buf)) >= end {
		return fail(tooLarge())
	}
	*out.buf = buf
	return nil
}
