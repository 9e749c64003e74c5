package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

// metricValue returns the value of a gauge or counter without labels.
func metricValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if g := m.GetGauge(); g != nil {
			return g.GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// rawCallback opens a connection and sends a callback's headers, declaring
// contentLength (-1: chunked, which the caller then writes itself), and
// the first bytes of the body.
func (b *bundle) rawCallback(t testing.TB, key string, contentLength int, first []byte) net.Conn {
	t.Helper()
	u, err := url.Parse(b.URL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	length := fmt.Sprintf("Content-Length: %d\r\n", contentLength)
	if contentLength < 0 {
		length = "Transfer-Encoding: chunked\r\n"
	}
	_, err = fmt.Fprintf(conn, "POST /v1/callbacks HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\n%s\r\n", u.Host, key, length)
	require.NoError(t, err)
	_, err = conn.Write(first)
	require.NoError(t, err)
	return conn
}

func readAnswer(t testing.TB, conn net.Conn) *http.Response {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestCallbackDeclaredLengthReservesNothing: twenty connections that declare
// a 10 MiB body and send 5 bytes must not make the server hold 200 MiB.
// Not parallel: it measures this process's heap.
func TestCallbackDeclaredLengthReservesNothing(t *testing.T) {
	b := setup(t, privateOK())
	w := b.world(t)
	const conns = 20
	const inFlight = "hookrelay_ingest_body_bytes_in_flight"

	before := heapInUse()
	for range conns {
		b.rawCallback(t, w.CarrierKey, api.DefaultMaxBodyBytes, []byte(`{"tra`))
	}
	// Every handler holds its buffer once the in-flight bytes stop moving.
	var last float64
	require.Eventually(t, func() bool {
		v := metricValue(t, b.Registry, inFlight)
		settled := v > 0 && v == last
		last = v
		return settled
	}, 10*time.Second, 200*time.Millisecond)
	grown := int64(heapInUse()) - int64(before)
	t.Logf("heap grew by %d KiB with %d bodies of 5 bytes declared as 10 MiB; bodies hold %.0f bytes", grown>>10, conns, last)
	require.Less(t, grown, int64(20<<20), "the server reserved memory for bytes that never came")
	require.Less(t, last, float64(conns*(64<<10)+1))
}

// TestCallbackBodyMemoryBound: uploads that together would take more than
// MemoryBytes are refused with 503 and Retry-After, the others are taken,
// and the memory held returns to zero.
func TestCallbackBodyMemoryBound(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets, Config: api.Config{MemoryBytes: 1 << 20}})
	w := b.world(t)
	const inFlight = "hookrelay_ingest_body_bytes_in_flight"
	const refusals = "hookrelay_ingest_body_memory_refusals_total"

	// 300 KiB bodies: two fit in 1 MiB; a third cannot, as growing its
	// buffer holds the old and the new one (at least 450 KiB) beside the
	// two others' 600 KiB.
	const size = 300 << 10
	bodyOf := func(k int) []byte {
		head := fmt.Sprintf(`{"tracking_no":"up-%d","pad":"`, k)
		return []byte(head + strings.Repeat("p", size-len(head)-2) + `"}`)
	}
	var held []net.Conn
	for k := range 2 {
		body := bodyOf(k)
		held = append(held, b.rawCallback(t, w.CarrierKey, size, body[:size-1]))
		// Each holds its body's length (+1 to see the end) once read.
		want := float64((k + 1) * (size + 1))
		require.Eventually(t, func() bool { return metricValue(t, b.Registry, inFlight) == want },
			10*time.Second, 10*time.Millisecond, "upload %d", k)
	}

	over := b.rawCallback(t, w.CarrierKey, size, nil)
	go func() { _, _ = over.Write(bodyOf(2)[:size-1]) }()
	resp := readAnswer(t, over)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.True(t, resp.Close, "the rest of a refused body is not read")
	require.Equal(t, float64(1), metricValue(t, b.Registry, refusals))
	require.Equal(t, float64(2*(size+1)), metricValue(t, b.Registry, inFlight), "the refused upload holds nothing")

	for k, conn := range held {
		_, err := conn.Write([]byte(`}`))
		require.NoError(t, err)
		resp := readAnswer(t, conn)
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "upload %d", k)
	}
	require.Eventually(t, func() bool { return metricValue(t, b.Registry, inFlight) == 0 },
		10*time.Second, 10*time.Millisecond)
	stats := b.stats(t)
	require.Equal(t, float64(2), stats["messages_today_utc"])
}

// TestCallbackBodyOverLimit: a body over MaxBodyBytes is 413 whether it
// declares its length or not; one exactly at the limit is taken.
func TestCallbackBodyOverLimit(t *testing.T) {
	t.Parallel()
	const limit = 1000
	b := setup(t, config{Ops: privateTargets, Config: api.Config{MaxBodyBytes: limit}})
	w := b.world(t)
	bodyOf := func(n int) []byte {
		head := `{"tracking_no":"lim","pad":"`
		return []byte(head + strings.Repeat("q", n-len(head)-2) + `"}`)
	}
	send := func(body []byte, chunked bool) int {
		req, err := http.NewRequest(http.MethodPost, b.URL+"/v1/callbacks", strings.NewReader(string(body)))
		require.NoError(t, err)
		if chunked {
			req.ContentLength = -1
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+w.CarrierKey)
		resp, err := apitest.Client(t).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, chunked := range []bool{false, true} {
		require.Equal(t, http.StatusRequestEntityTooLarge, send(bodyOf(limit+1), chunked), "chunked %v", chunked)
		require.Equal(t, http.StatusRequestEntityTooLarge, send(bodyOf(50*limit), chunked), "chunked %v", chunked)
		require.Equal(t, http.StatusAccepted, send(bodyOf(limit), chunked), "chunked %v", chunked)
	}

	// Declared over the limit: refused before anything is read.
	conn := b.rawCallback(t, w.CarrierKey, limit+1, nil)
	resp := readAnswer(t, conn)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.True(t, resp.Close, "the body is not waited for")
	require.Equal(t, float64(0), metricValue(t, b.Registry, "hookrelay_ingest_body_bytes_in_flight"))
}

// TestCallbackBodiesKeptApart: concurrent callbacks of many sizes, inline
// and offloaded, are each stored with their own bytes, although their
// buffers are reused.
func TestCallbackBodiesKeptApart(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets, Config: api.Config{OffloadBytes: 2000}})
	w := b.world(t)
	ctx := context.Background()
	const n = 60
	bodies := make([][]byte, n)
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		bodies[i] = []byte(fmt.Sprintf(`{"tracking_no":"kept-%d","pad":"%s"}`, i, strings.Repeat(string(rune('a'+i%26)), 97*i)))
		wg.Go(func() {
			st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, bodies[i])
			require.Equal(t, http.StatusAccepted, st, "%v", out)
			ids[i] = id64(t, out["message_id"])
		})
	}
	wg.Wait()
	for i, id := range ids {
		msg, err := dbtest.MessageGetByID(ctx, b.DB, id)
		require.NoError(t, err)
		got := msg.Payload
		if msg.PayloadKey != "" {
			got, err = b.Payloads.Get(ctx, msg.PayloadKey)
			require.NoError(t, err)
		}
		require.Equal(t, string(bodies[i]), string(got), "callback %d", i)
	}
	require.Equal(t, float64(0), metricValue(t, b.Registry, "hookrelay_ingest_body_bytes_in_flight"))
}
