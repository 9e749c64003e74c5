package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// watchClock is a settable clock for the carriers' watch.
type watchClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *watchClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *watchClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// watchConfig writes the watch's log and statistics at once.
func watchConfig() config {
	cfg := config{Ops: privateTargets}
	cfg.Watch = ingest.WatchConfig{FlushInterval: 5 * time.Millisecond, StatsInterval: 5 * time.Millisecond}
	return cfg
}

// refusals returns a carrier's refusal log as the API answers it.
func (b *bundle) refusals(t testing.TB, carrierID, query string) []map[string]any {
	t.Helper()
	st, out := b.call(t, http.MethodGet, "/v1/carriers/"+carrierID+"/refusals"+query, adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	var items []map[string]any
	for _, it := range out["items"].([]any) {
		items = append(items, it.(map[string]any))
	}
	return items
}

// waitRefusal waits until the log of carrierID has an entry of reason and
// returns it.
func (b *bundle) waitRefusal(t testing.TB, carrierID, reason string) map[string]any {
	t.Helper()
	var found map[string]any
	testenv.Eventually(t, 10*time.Second, "a refusal "+reason, func() bool {
		items := b.refusals(t, carrierID, "?reason="+reason)
		if len(items) > 0 {
			found = items[0]
		}
		return found != nil
	})
	return found
}

// TestRefusalLogReasons: each reason a callback is refused for today is in
// its carrier's refusal log with its status, message and an excerpt of the
// request without credentials.
func TestRefusalLogReasons(t *testing.T) {
	t.Parallel()
	cfg := watchConfig()
	cfg.MaxBodyBytes = 4096
	b := setup(t, cfg)
	w := b.world(t)
	signed := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "signed", "signing_secret": "0123456789abcdef0123"})
	slow := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "slow", "rate_limit_per_sec": 1})
	fenced := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "fenced", "allowed_cidrs": []string{"203.0.113.0/24"}})
	off := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "off"})
	st, out := b.call(t, http.MethodPost, "/v1/carriers/"+off["id"].(string)+"/disable", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)

	post := func(key string, body []byte, hdr ...string) int {
		t.Helper()
		resp := b.do(t, http.MethodPost, "/v1/callbacks", key, body, hdr...)
		resp.Body.Close()
		return resp.StatusCode
	}
	// auth: a key with the carrier's displayable prefix that is not its key.
	require.Equal(t, 401, post(w.CarrierKey[:8]+"wrongwrongwrongwrong", []byte(`{"tracking_no":"a"}`)))
	require.Equal(t, 415, post(w.CarrierKey, []byte(`{"tracking_no":"a"}`), "Content-Type", "text/plain"))
	require.Equal(t, 413, post(w.CarrierKey, []byte(`{"tracking_no":"`+strings.Repeat("x", 5000)+`"}`)))
	require.Equal(t, 400, post(w.CarrierKey, []byte(`{"tracking_no": nope`), "Idempotency-Key", "idem-1", "X-Signature", "sha256=00", "Cookie", "c=1"))
	require.Equal(t, 400, post(w.CarrierKey, []byte(`{"status":"picked_up"}`)))
	require.Equal(t, 400, post(w.CarrierKey, []byte(`{"tracking_no":"\u0001replay"}`)))
	require.Equal(t, 401, post(signed["api_key"].(string), []byte(`{"tracking_no":"a"}`), "X-Signature", "sha256=00"))
	require.Equal(t, 403, post(fenced["api_key"].(string), []byte(`{"tracking_no":"a"}`)))
	testenv.Eventually(t, 10*time.Second, "the disabled carrier refused", func() bool {
		return post(off["api_key"].(string), []byte(`{"tracking_no":"a"}`)) == 403
	})
	limited := 0
	for range 20 {
		if post(slow["api_key"].(string), []byte(`{"tracking_no":"a"}`)) == 429 {
			limited++
			break
		}
	}
	require.Equal(t, 1, limited, "the slow carrier was never limited")

	for reason, status := range map[string]float64{
		"auth": 401, "content_type": 415, "too_large": 413, "parse": 400, "missing_ordering_key": 400, "invalid_field": 400,
	} {
		r := b.waitRefusal(t, w.CarrierID, reason)
		require.Equal(t, status, r["status"], reason)
		require.NotEmpty(t, r["message"], reason)
		require.NotEmpty(t, r["received_at"], reason)
		require.Zero(t, r["dropped"], reason)
		headers := r["headers"].(map[string]any)
		require.NotContains(t, headers, "Authorization", reason)
	}
	parse := b.waitRefusal(t, w.CarrierID, "parse")
	require.Equal(t, `{"tracking_no": nope`, parse["body_excerpt"])
	require.Equal(t, "body must be one valid JSON object", parse["message"])
	headers := parse["headers"].(map[string]any)
	require.Equal(t, "idem-1", headers["Idempotency-Key"])
	require.NotContains(t, headers, "X-Signature")
	require.NotContains(t, headers, "Cookie")
	missing := b.waitRefusal(t, w.CarrierID, "missing_ordering_key")
	require.Contains(t, missing["message"], "missing ordering key")
	require.Equal(t, `{"status":"picked_up"}`, missing["body_excerpt"])

	sig := b.waitRefusal(t, signed["id"].(string), "signature")
	require.Equal(t, float64(401), sig["status"])
	require.NotContains(t, sig["headers"].(map[string]any), "X-Signature")
	require.Equal(t, float64(429), b.waitRefusal(t, slow["id"].(string), "rate_limited")["status"])
	address := b.waitRefusal(t, fenced["id"].(string), "address")
	require.Equal(t, float64(403), address["status"])
	require.Contains(t, address["message"], "allowed_cidrs")
	disabled := b.waitRefusal(t, off["id"].(string), "disabled")
	require.Equal(t, float64(403), disabled["status"])
	require.Contains(t, disabled["message"], "carrier disabled")

	// The filter, and the metric per carrier and outcome.
	for _, r := range b.refusals(t, w.CarrierID, "?reason=parse") {
		require.Equal(t, "parse", r["reason"])
	}
	st, out = b.call(t, http.MethodGet, "/v1/carriers/"+w.CarrierID+"/refusals?reason=nonsense", adminToken, nil)
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	require.Equal(t, 1.0, labelledValue(t, b.Registry, "hookrelay_carrier_callbacks_total", "carrier", w.CarrierID, "outcome", "parse"))
}

// labelledValue returns the value of the counter of name with the labels
// (name, value pairs); 0 when there is none.
func labelledValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestRefusalLogCaps: a flood of refusals from one carrier beyond the log's
// cap is counted, in one entry per reason and minute without excerpts, not
// stored one by one; another carrier's refusals are still stored.
func TestRefusalLogCaps(t *testing.T) {
	t.Parallel()
	clock := &watchClock{t: time.Now().Truncate(time.Minute).Add(10 * time.Second)}
	cfg := watchConfig()
	cfg.Watch.PerMinute, cfg.Watch.Now = 3, clock.Now
	b := setup(t, cfg)
	w := b.world(t)
	other := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "other"})

	const flood = 25
	for range flood {
		st, _ := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`not json`))
		require.Equal(t, 400, st)
	}
	st, _ := b.call(t, http.MethodPost, "/v1/callbacks", other["api_key"].(string), []byte(`not json`))
	require.Equal(t, 400, st)
	b.waitRefusal(t, other["id"].(string), "parse")
	testenv.Eventually(t, 10*time.Second, "the capped refusals stored", func() bool {
		return len(b.refusals(t, w.CarrierID, "")) == 3
	})
	require.Equal(t, float64(flood-3), metricValue(t, b.Registry, "hookrelay_carrier_refusals_not_logged_total"))
	require.Equal(t, float64(flood), labelledValue(t, b.Registry, "hookrelay_carrier_callbacks_total", "carrier", w.CarrierID, "outcome", "parse"))

	// Once the minute is over, its count is written.
	clock.Add(time.Minute)
	var summary map[string]any
	testenv.Eventually(t, 10*time.Second, "the count of the refusals not stored", func() bool {
		for _, r := range b.refusals(t, w.CarrierID, "?reason=parse") {
			if r["dropped"].(float64) > 0 {
				summary = r
			}
		}
		return summary != nil
	})
	require.Equal(t, float64(flood-3), summary["dropped"])
	require.Empty(t, summary["body_excerpt"])
	require.Contains(t, summary["message"], "counted, not stored")
	require.Len(t, b.refusals(t, w.CarrierID, ""), 4)

	// Paging: newest first, with a cursor.
	st, out := b.call(t, http.MethodGet, "/v1/carriers/"+w.CarrierID+"/refusals?limit=3", adminToken, nil)
	require.Equal(t, 200, st)
	require.Len(t, out["items"], 3)
	require.NotEmpty(t, out["next_cursor"])
	st, out = b.call(t, http.MethodGet, "/v1/carriers/"+w.CarrierID+"/refusals?limit=3&cursor="+out["next_cursor"].(string), adminToken, nil)
	require.Equal(t, 200, st)
	require.Len(t, out["items"], 1)
}

// TestCarrierHealth: the accepted and refused callbacks of a carrier, its
// rate, last callback and p99, from the statistics the API writes.
func TestCarrierHealth(t *testing.T) {
	t.Parallel()
	b := setup(t, watchConfig())
	w := b.world(t)
	for i := range 4 {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, map[string]any{"tracking_no": i})
		require.Equal(t, 202, st, "%v", out)
	}
	st, _ := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(`{}`))
	require.Equal(t, 400, st)
	var h map[string]any
	testenv.Eventually(t, 10*time.Second, "the carrier's health", func() bool {
		st, h = b.call(t, http.MethodGet, "/v1/carriers/"+w.CarrierID+"/health", adminToken, nil)
		require.Equal(t, 200, st, "%v", h)
		return h["accepted"].(float64) == 4 && h["refused_total"].(float64) == 1
	})
	require.Equal(t, map[string]any{"missing_ordering_key": 1.0}, h["refused"])
	require.NotNil(t, h["last_callback_at"])
	require.Positive(t, h["p99_ms"])
	require.Positive(t, h["per_second"])
	require.Equal(t, 4.0, labelledValue(t, b.Registry, "hookrelay_carrier_callbacks_total", "carrier", w.CarrierID, "outcome", "accepted"))

	st, out := b.call(t, http.MethodGet, "/v1/carriers/999999/health", adminToken, nil)
	require.Equal(t, 404, st, "%v", out)
}

// TestTryCallback: a sample is answered with what the intake would do with
// it — routing values and endpoints after filters, or the refusal — and
// nothing is stored.
func TestTryCallback(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets})
	w := b.world(t)
	// A third endpoint of shop-one that takes only "delivered".
	only := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/delivered", "event_types": []string{"delivered"}, "description": "delivered only"})
	try := func(body any) map[string]any {
		t.Helper()
		st, out := b.call(t, http.MethodPost, "/v1/carriers/"+w.CarrierID+"/try", adminToken, body)
		require.Equal(t, http.StatusOK, st, "%v", out)
		return out
	}
	ids := func(out map[string]any) []string {
		var s []string
		for _, e := range out["endpoints"].([]any) {
			s = append(s, e.(map[string]any)["id"].(string))
		}
		return s
	}

	out := try(map[string]any{"body": map[string]any{"tracking_no": "SF1", "status": "delivered"}})
	require.Equal(t, true, out["accepted"])
	require.Equal(t, "SF1", out["ordering_key"])
	require.Equal(t, "delivered", out["event_type"])
	require.ElementsMatch(t, []string{w.E1, w.E2, only["id"].(string)}, ids(out))
	require.Equal(t, 3.0, out["endpoint_count"])

	// A string body, a merchant in a header: only that merchant's endpoints
	// whose event types match.
	out = try(map[string]any{"body": `{"tracking_no":"SF2","status":"picked_up"}`, "headers": map[string]string{"X-Merchant-Id": "shop-one"}})
	require.Equal(t, true, out["accepted"])
	require.Equal(t, "shop-one", out["merchant"])
	require.Equal(t, []string{w.E1}, ids(out))

	out = try(map[string]any{"body": map[string]any{"status": "delivered"}})
	require.Equal(t, false, out["accepted"])
	refusal := out["refusal"].(map[string]any)
	require.Equal(t, "missing_ordering_key", refusal["reason"])
	require.Equal(t, 400.0, refusal["status"])
	require.Contains(t, refusal["message"], "tracking_no")

	out = try(map[string]any{"body": `{"tracking_no":`})
	require.Equal(t, "parse", out["refusal"].(map[string]any)["reason"])

	st, body := b.call(t, http.MethodPost, "/v1/carriers/"+w.CarrierID+"/try", adminToken, map[string]any{"headers": map[string]string{}})
	require.Equal(t, 400, st, "%v", body)
	st, body = b.call(t, http.MethodPost, "/v1/carriers/999999/try", adminToken, map[string]any{"body": map[string]any{"tracking_no": "x"}})
	require.Equal(t, 404, st, "%v", body)

	// Nothing was stored.
	st, body = b.call(t, http.MethodGet, "/v1/messages?carrier_id="+w.CarrierID, adminToken, nil)
	require.Equal(t, 200, st, "%v", body)
	require.Empty(t, body["items"])
}

// TestCarrierWatchRoutesAdminOnly: merchant and carrier keys get 403 on the
// carriers' watch routes.
func TestCarrierWatchRoutesAdminOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets})
	w := b.world(t)
	for _, key := range []string{w.M1Key, w.CarrierKey} {
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/v1/carriers/" + w.CarrierID + "/refusals"},
			{http.MethodGet, "/v1/carriers/" + w.CarrierID + "/health"},
			{http.MethodPost, "/v1/carriers/" + w.CarrierID + "/try"},
		} {
			var body any
			if r.method == http.MethodPost {
				body = map[string]any{"body": map[string]any{"tracking_no": "x"}}
			}
			st, out := b.call(t, r.method, r.path, key, body)
			require.Equal(t, http.StatusForbidden, st, "%s %s: %v", r.method, r.path, out)
		}
	}
}

// BenchmarkRefusedCallbacks floods the API with callbacks of one carrier
// that are refused (not JSON), from 64 concurrent clients on loopback: the
// figure to read is refusals/s, each logged in the refusal log up to its
// caps and counted beyond them.
func BenchmarkRefusedCallbacks(b *testing.B) {
	bd := setup(b, config{Ops: privateTargets})
	w := bd.mustCreate(b, "/v1/carriers", adminToken, map[string]any{"name": "flood"})
	key := w["api_key"].(string)
	rate := postParallel(b, bd.URL+"/v1/callbacks", key, 64, http.StatusBadRequest, func() []byte {
		return []byte(`{"tracking_no": "SF1", oops}`)
	})
	b.ReportMetric(rate, "refusals/s")
	b.ReportMetric(metricValue(b, bd.Registry, "hookrelay_carrier_refusals_not_logged_total"), "not-logged")
}

// TestRefusedKeyPrefix: a refused key is logged under the carrier whose key
// has its displayable prefix, and under no carrier once two carriers share
// that prefix.
func TestRefusedKeyPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t, watchConfig())
	one := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "one"})
	two := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "two"})
	wrong := one["api_key"].(string)[:8] + "wrongwrongwrongwrong"
	// Refused for the key, or once the address failed too often for it.
	post := func() {
		t.Helper()
		resp := b.do(t, http.MethodPost, "/v1/callbacks", wrong, []byte(`{"tracking_no":"a"}`))
		resp.Body.Close()
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, resp.StatusCode)
	}
	post()
	require.Equal(t, float64(401), b.waitRefusal(t, one["id"].(string), "auth")["status"])

	conn, err := pgx.Connect(t.Context(), b.DBURL)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(t.Context()))
	_, err = conn.Exec(t.Context(), "UPDATE carriers SET api_key_prefix = $1 WHERE id = $2", one["api_key_prefix"], two["id"])
	require.NoError(t, err)
	testenv.Eventually(t, 10*time.Second, "a refused key under no carrier", func() bool {
		post()
		return labelledValue(t, b.Registry, "hookrelay_carrier_callbacks_total", "carrier", "unknown", "outcome", "auth")+
			labelledValue(t, b.Registry, "hookrelay_carrier_callbacks_total", "carrier", "unknown", "outcome", "rate_limited") > 0
	})
	for _, outcome := range []string{"auth", "rate_limited"} {
		require.Zero(t, labelledValue(t, b.Registry, "hookrelay_carrier_callbacks_total", "carrier", two["id"].(string), "outcome", outcome))
	}
}
