package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/ops"
)

// privateTargets lets endpoints reach the tests' loopback receivers.
var privateTargets = ops.Config{AllowPrivateTargets: true}

func privateOK() config { return config{Ops: privateTargets} }

func id64(t testing.TB, s any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s.(string), 10, 64)
	require.NoError(t, err)
	return n
}

func TestCallbackFanOutAndStoresOriginalBytes(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	ctx := context.Background()

	body := []byte("{\"tracking_no\": \"SF1\",  \"status\":\"delivered\", \"x\": 1.50}\n")
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, float64(2), out["deliveries"], "both merchants' endpoints match")
	require.Equal(t, false, out["duplicate"])
	msg, err := dbtest.MessageGetByID(ctx, b.DB, id64(t, out["message_id"]))
	require.NoError(t, err)
	require.Equal(t, body, msg.Payload, "the payload is stored byte for byte")
	require.Equal(t, "SF1", msg.OrderingKey)
	require.Equal(t, "delivered", msg.EventType)

	// Merchant routing by header: only that merchant's endpoint.
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{"tracking_no":"SF2"}`), "X-Merchant-Id", w.M2)
	require.Equal(t, http.StatusAccepted, st)
	require.Equal(t, float64(1), out["deliveries"])
	e2 := id64(t, w.E2)
	pending, err := b.DB.DeliveryListPending(ctx, e2, 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 2)

	// Routing by body field, numeric ordering key, headers overriding the body.
	st, out = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey,
		[]byte(`{"tracking_no":12345,"merchant_id":"`+w.M1+`","status":"x"}`), "X-Event-Type", "picked_up")
	require.Equal(t, http.StatusAccepted, st)
	require.Equal(t, float64(1), out["deliveries"])
	msg, err = dbtest.MessageGetByID(ctx, b.DB, id64(t, out["message_id"]))
	require.NoError(t, err)
	require.Equal(t, "12345", msg.OrderingKey)
	require.Equal(t, "picked_up", msg.EventType)
	require.Equal(t, w.M1, msg.MerchantRef)
}

func TestCallbackFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	other := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "other", "ordering_key_field": "shipment.no"})
	// An endpoint for "other" only, and delivered events only.
	b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{
		"url": "http://127.0.0.1:9/f", "carriers": []any{"other"}, "event_types": []string{"delivered"},
	})
	send := func(key, body string) float64 {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", key, []byte(body))
		require.Equal(t, http.StatusAccepted, st, "%v", out)
		return out["deliveries"].(float64)
	}
	require.Equal(t, float64(2), send(w.CarrierKey, `{"tracking_no":"a","status":"delivered"}`))
	require.Equal(t, float64(3), send(other["api_key"].(string), `{"shipment":{"no":"b"},"status":"delivered"}`))
	require.Equal(t, float64(2), send(other["api_key"].(string), `{"shipment":{"no":"b"},"status":"in_transit"}`))
	// Disabled endpoints still get deliveries (held by the dispatcher).
	st, _ := b.call(t, http.MethodPost, "/v1/endpoints/"+w.E1+"/disable", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(2), send(w.CarrierKey, `{"tracking_no":"a"}`))
	// Deleted ones do not.
	st, _ = b.call(t, http.MethodDelete, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, float64(1), send(w.CarrierKey, `{"tracking_no":"a"}`))
}

func TestCallbackErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets, Config: api.Config{MaxBodyBytes: 1000}})
	w := b.world(t)
	signed := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "signed", "signing_secret": "0123456789abcdef-secret"})
	sKey := signed["api_key"].(string)

	cases := []struct {
		name   string
		token  string
		body   []byte
		hdr    []string
		status int
		code   string
	}{
		{"no key", "", []byte(`{}`), nil, 401, "unauthorized"},
		{"bad key", "hrc_nope", []byte(`{}`), nil, 401, "unauthorized"},
		{"merchant key", w.M1Key, []byte(`{}`), nil, 403, "forbidden"},
		{"admin token", adminToken, []byte(`{}`), nil, 403, "forbidden"},
		{"not json type", w.CarrierKey, []byte(`{}`), []string{"Content-Type", "text/plain"}, 415, "unsupported"},
		{"bad json", w.CarrierKey, []byte(`{"tracking_no":`), nil, 400, "invalid"},
		{"array", w.CarrierKey, []byte(`[1]`), nil, 400, "invalid"},
		{"no ordering key", w.CarrierKey, []byte(`{"status":"x"}`), nil, 400, "invalid"},
		{"empty ordering key", w.CarrierKey, []byte(`{"tracking_no":""}`), nil, 400, "invalid"},
		{"long ordering key", w.CarrierKey, []byte(`{}`), []string{"X-Ordering-Key", strings.Repeat("k", 1025)}, 400, "invalid"},
		{"long idempotency key", w.CarrierKey, []byte(`{"tracking_no":"a"}`), []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, "invalid"},
		{"too large", w.CarrierKey, []byte(`{"tracking_no":"` + strings.Repeat("x", 1000) + `"}`), nil, 413, "too_large"},
		{"missing signature", sKey, []byte(`{"tracking_no":"a"}`), nil, 401, "invalid_signature"},
		{"wrong signature", sKey, []byte(`{"tracking_no":"a"}`), []string{"X-Signature", "sha256=00ff"}, 401, "invalid_signature"},
	}
	for _, tc := range cases {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", tc.token, tc.body, tc.hdr...)
		require.Equal(t, tc.status, st, "%s: %v", tc.name, out)
		require.Equal(t, tc.code, errCode(out), tc.name)
		require.NotEmpty(t, out["error"].(map[string]any)["message"], tc.name)
	}

	// Chunked body over the limit (no Content-Length): still 413.
	req, err := http.NewRequest(http.MethodPost, b.URL+"/v1/callbacks", strings.NewReader(`{"a":"`+strings.Repeat("y", 5000)+`"}`))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+w.CarrierKey)
	resp, err := apitest.Client(t).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	// A correct signature passes.
	body := []byte(`{"tracking_no":"a"}`)
	mac := hmac.New(sha256.New, []byte("0123456789abcdef-secret"))
	mac.Write(body)
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", sKey, body, "X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.NotContains(t, b.Logs.String(), "0123456789abcdef-secret")

	// Nothing of the failed requests was stored.
	stats := b.stats(t)
	require.Equal(t, float64(1), stats["messages_today_utc"])
}

func (b *bundle) stats(t testing.TB) map[string]any {
	t.Helper()
	st, out := b.call(t, http.MethodGet, "/v1/stats", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	return out
}

func TestCallbackRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	c := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "slow", "rate_limit_per_sec": 2})
	key := c["api_key"].(string)
	var limited *http.Response
	for i := 0; i < 10 && limited == nil; i++ {
		resp := b.do(t, http.MethodPost, "/v1/callbacks", key, []byte(`{"tracking_no":"a"}`))
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = resp
		} else {
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
		}
	}
	require.NotNil(t, limited, "a burst over the rate is refused")
	require.NotEmpty(t, limited.Header.Get("Retry-After"))
}

func TestCallbackIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	body := []byte(`{"tracking_no":"T1"}`)
	st, first := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusAccepted, st)
	st, again := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, true, again["duplicate"])
	require.Equal(t, first["message_id"], again["message_id"])
	require.Equal(t, first["deliveries"], again["deliveries"])
	require.Equal(t, float64(1), b.stats(t)["messages_today_utc"])
	require.Equal(t, float64(2), b.stats(t)["pending_deliveries"])

	// Concurrent duplicates: exactly one stores, all answer the same id.
	const n = 20
	var wg sync.WaitGroup
	results := make([]map[string]any, n)
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], results[i] = b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, body, "Idempotency-Key", "k2")
		}()
	}
	wg.Wait()
	accepted := 0
	for i := range n {
		require.Equal(t, results[0]["message_id"], results[i]["message_id"])
		if codes[i] == http.StatusAccepted {
			accepted++
			require.Equal(t, false, results[i]["duplicate"])
		} else {
			require.Equal(t, http.StatusOK, codes[i])
			require.Equal(t, true, results[i]["duplicate"])
		}
	}
	require.Equal(t, 1, accepted)
	require.Equal(t, float64(2), b.stats(t)["messages_today_utc"])
	require.Equal(t, float64(4), b.stats(t)["pending_deliveries"])
}

func TestCallbackGroupCommit(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	const n = 200
	var wg sync.WaitGroup
	ids := make([]string, n)
	sem := make(chan struct{}, 50)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(fmt.Sprintf(`{"tracking_no":"k%d"}`, i)))
			require.Equal(t, http.StatusAccepted, st)
			ids[i] = out["message_id"].(string)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		require.False(t, seen[id], "each request gets its own message")
		seen[id] = true
		msg, err := dbtest.MessageGetByID(context.Background(), b.DB, id64(t, id))
		require.NoError(t, err, "acknowledged means committed")
		require.Equal(t, 2, msg.Deliveries)
	}
	require.Equal(t, float64(n*2), b.stats(t)["pending_deliveries"])
	// Several requests shared transactions.
	mfs, err := b.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "hookrelay_ingest_batch_size" {
			h := mf.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(n), uint64(h.GetSampleSum()))
			require.Less(t, h.GetSampleCount(), uint64(n), "some batches held several callbacks")
		}
	}
}
