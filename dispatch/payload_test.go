package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/storage"
)

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestOffloadedPayloads: an inline endpoint receives the object's bytes
// fetched from S3; a reference endpoint the presigned-URL envelope; with the
// store down the attempt fails without spending an attempt or touching the
// endpoint's circuit, and goes through once the store is back.
func TestOffloadedPayloads(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	addr, dir := freeAddr(t), t.TempDir()
	emb := testenv.StartS3(t, nil, addr, dir)
	payloads := testenv.Payloads(t, emb)

	big := []byte(`{"tracking_no":"BIG","label":"` + strings.Repeat("x", 20000) + `"}`)
	key := storage.PayloadKey(time.Now(), "big-1")
	_, err := payloads.Put(ctx, key, big)
	require.NoError(t, err)
	sum := sha256.Sum256(big)

	inline, ref := newSink(t), newSink(t)
	epInline, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: inline.srv.URL})
	epRef, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: ref.srv.URL, PayloadMode: "reference"})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{epInline.ID, epRef.ID}, OrderingKey: "BIG", Queues: 8, Payload: big, PayloadKey: key})

	cfg := testConfig()
	d := New(testLogger(t), cfg, store, payloads, nil)
	testenv.Go(t, "the dispatcher", d.Run)

	testenv.Eventually(t, 20*time.Second, "both deliveries", func() bool { return len(inline.requests()) == 1 && len(ref.requests()) == 1 })
	require.Equal(t, big, inline.requests()[0].Body)
	var env struct {
		Type   string `json:"type"`
		URL    string `json:"url"`
		Size   int    `json:"size"`
		SHA256 string `json:"sha256"`
	}
	require.NoError(t, json.Unmarshal(ref.requests()[0].Body, &env))
	require.Equal(t, "payload.reference", env.Type)
	require.Equal(t, len(big), env.Size)
	require.Equal(t, hex.EncodeToString(sum[:]), env.SHA256)
	resp, err := http.Get(env.URL)
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, big, got, "the presigned URL serves the payload")

	// The store goes down.
	key2 := storage.PayloadKey(time.Now(), "big-2")
	_, err = payloads.Put(ctx, key2, big)
	require.NoError(t, err)
	require.NoError(t, emb.Close())
	m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{epInline.ID}, OrderingKey: "BIG2", Queues: 8, Payload: big, PayloadKey: key2})
	testenv.Eventually(t, 30*time.Second, "failed attempt recorded", func() bool {
		atts, err := dbtest.AttemptsForDelivery(ctx, store, m.DeliveryIDs[0])
		require.NoError(t, err)
		return len(atts) >= 1
	})
	atts, err := dbtest.AttemptsForDelivery(ctx, store, m.DeliveryIDs[0])
	require.NoError(t, err)
	require.Contains(t, atts[0].Error, "payload store")
	h, err := dbtest.EndpointHealthGet(ctx, store, epInline.ID)
	if err == nil {
		require.Zero(t, h.ConsecutiveFailures, "the store outage is not the endpoint's failure")
	}
	require.Len(t, inline.requests(), 1)

	testenv.StartS3(t, nil, addr, dir)
	testenv.Eventually(t, 30*time.Second, "delivery after the store is back", func() bool { return len(inline.requests()) == 2 })
	r := inline.requests()[1]
	require.Equal(t, big, r.Body)
	require.Equal(t, "1", r.Header.Get("X-Hookrelay-Attempt"), "the outage spent no attempt")
}

// TestShutdownReleasesInFlight: a dispatcher stopped while a delivery hangs
// releases it (visible again at once, no attempt spent), its queue leases
// and its registration.
func TestShutdownReleasesInFlight(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	g := newGatedSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: g.srv.URL})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8})
	cfg := testConfig()
	cfg.Lease, cfg.DrainTimeout = time.Minute, 200*time.Millisecond
	d, stop := runDispatcher(t, store, cfg)
	testenv.Eventually(t, 20*time.Second, "delivery in flight", func() bool { return g.count() == 1 })
	require.NoError(t, stop())

	counts, err := dbtest.DeliveryQueueCounts(ctx, store)
	require.NoError(t, err)
	require.Len(t, counts, 1)
	require.EqualValues(t, 1, counts[0].Due, "released: visible now although the lease was a minute")
	leases, err := dbtest.QueueLeasesList(ctx, store)
	require.NoError(t, err)
	for _, l := range leases {
		require.NotEqual(t, d.ID(), l.Owner, "queue leases released")
	}
	_, alive, err := store.DispatcherHeartbeat(ctx, d.ID(), time.Hour)
	require.NoError(t, err)
	require.False(t, alive, "the dispatcher is marked stopped")

	g.open()
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 20*time.Second, "delivered by the next dispatcher", func() bool { return len(g.delivered()) == 1 })
}
