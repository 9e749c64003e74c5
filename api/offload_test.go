package api_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func TestCallbackOffloadBothWays(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets, Config: api.Config{OffloadBytes: 100}})
	w := b.world(t)
	ctx := context.Background()

	small := []byte(`{"tracking_no":"S"}`)
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, small)
	require.Equal(t, http.StatusAccepted, st)
	msg, err := dbtest.MessageGetByID(ctx, b.DB, id64(t, out["message_id"]))
	require.NoError(t, err)
	require.Equal(t, small, msg.Payload)
	require.Empty(t, msg.PayloadKey)

	large := []byte(`{"tracking_no":"L","pad":"` + strings.Repeat("z", 500) + `"}`)
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, large)
	require.Equal(t, http.StatusAccepted, st)
	msg, err = dbtest.MessageGetByID(ctx, b.DB, id64(t, out["message_id"]))
	require.NoError(t, err)
	require.Nil(t, msg.Payload, "a large payload is never in PostgreSQL")
	require.True(t, strings.HasPrefix(msg.PayloadKey, "payloads/"))
	require.True(t, strings.HasSuffix(msg.PayloadKey, "/"+out["message_id"].(string)), "the key names the message")
	require.Equal(t, len(large), msg.PayloadSize)
	sum := sha256.Sum256(large)
	require.Equal(t, sum[:], msg.PayloadSHA256)
	got, err := b.Payloads.Get(ctx, msg.PayloadKey)
	require.NoError(t, err)
	require.Equal(t, large, got)

	// A duplicate's object is removed again: no row refers to it.
	st, first := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, large, "Idempotency-Key", "big")
	require.Equal(t, http.StatusAccepted, st)
	st, dup := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, large, "Idempotency-Key", "big")
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, first["message_id"], dup["message_id"])
	n, err := b.Payloads.DeletePrefix(ctx, "payloads/")
	require.NoError(t, err)
	require.Equal(t, 2, n, "the two stored messages' objects, not the duplicate's")
}

func TestCallbackS3DownAnswers503AndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets, Config: api.Config{OffloadBytes: 100}})
	w := b.world(t)
	require.NoError(t, b.S3.Close())

	large := []byte(`{"tracking_no":"L","pad":"` + strings.Repeat("z", 500) + `"}`)
	resp := b.do(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, large, "Idempotency-Key", "once")
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	stats := b.stats(t)
	require.Equal(t, float64(0), stats["messages_today_utc"])
	require.Equal(t, float64(0), stats["pending_deliveries"])

	// Small payloads do not need S3 and still go through.
	st, _ := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"S"}`), "Idempotency-Key", "once")
	require.Equal(t, http.StatusAccepted, st, "the failed request did not take the idempotency key")
}

func TestCallbackDatabaseDownAnswers503(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	b.DB.Close() // every later query fails as if the server were gone
	resp := b.do(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"a"}`))
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	st, out := b.call(t, http.MethodGet, "/v1/stats", adminToken, nil)
	require.Equal(t, http.StatusServiceUnavailable, st)
	require.Equal(t, "unavailable", errCode(out))
}
