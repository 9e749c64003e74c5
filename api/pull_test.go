package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/ops"
)

// pulledEvent is an event of a pull answer, its body kept as sent.
type pulledEvent struct {
	ID          string            `json:"id"`
	DeliveryID  string            `json:"delivery_id"`
	EventType   string            `json:"event_type"`
	OrderingKey string            `json:"ordering_key"`
	Attempt     int               `json:"attempt"`
	Headers     map[string]string `json:"headers"`
	Cursor      string            `json:"cursor"`
	Body        json.RawMessage   `json:"body"`
}

type pullPage struct {
	Items      []pulledEvent `json:"items"`
	NextCursor string        `json:"next_cursor"`
}

// pull fetches the events of endpoint ep with the query q and expects 200.
func (b *bundle) pull(t testing.TB, ep, token string, q url.Values) pullPage {
	t.Helper()
	resp := b.do(t, http.MethodGet, "/v1/endpoints/"+ep+"/events?"+q.Encode(), token, nil)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var p pullPage
	require.NoError(t, json.Unmarshal(raw, &p))
	return p
}

func (b *bundle) ack(t testing.TB, ep, token, cursor string) int {
	t.Helper()
	st, out := b.call(t, http.MethodPost, "/v1/endpoints/"+ep+"/events/ack", token, map[string]any{"cursor": cursor})
	require.Equal(t, http.StatusOK, st, "%v", out)
	return int(out["acknowledged"].(float64))
}

// pollWorld is world with a poll endpoint of merchant one.
func (b *bundle) pollWorld(t testing.TB) (world, string, string) {
	t.Helper()
	w := b.world(t)
	ep := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{"type": "poll"})
	require.Equal(t, "poll", ep["type"])
	require.Equal(t, "", ep["url"])
	return w, ep["id"].(string), ep["secret"].(string)
}

// verify checks an event's Standard Webhooks signature over its body.
func verify(t testing.TB, secret string, ev pulledEvent) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", ev.Headers["Webhook-Id"], ev.Headers["Webhook-Timestamp"], ev.Body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	require.Contains(t, strings.Split(ev.Headers["Webhook-Signature"], " "), want, "signature of %s", ev.ID)
	require.Equal(t, ev.ID, ev.Headers["Webhook-Id"])
}

func (b *bundle) send(t testing.TB, carrierKey, body string) {
	t.Helper()
	st, out := b.call(t, http.MethodPost, "/v1/callbacks", carrierKey, []byte(body))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
}

// TestPullOrderAckRedelivery: a poll endpoint's events come in the
// endpoint's delivery order, each key's in the order of its callbacks,
// across pulls that follow their cursors; nothing acknowledged comes again,
// everything not acknowledged does (from the last acknowledged cursor), and
// the order holds through the redelivery.
func TestPullOrderAckRedelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets})
	w, ep, secret := b.pollWorld(t)
	const keys, per = 3, 5
	for i := range per {
		for k := range keys {
			b.send(t, w.CarrierKey, fmt.Sprintf(`{"tracking_no":"K%d","status":"S%d","seq":%d}`, k, i, i))
		}
	}
	// Three pulls of four, following the cursors; then what is left.
	seen := map[string][]int{}
	record := func(evs []pulledEvent) {
		for _, ev := range evs {
			var body struct{ Seq int }
			require.NoError(t, json.Unmarshal(ev.Body, &body))
			seen[ev.OrderingKey] = append(seen[ev.OrderingKey], body.Seq)
			verify(t, secret, ev)
			require.Equal(t, ev.OrderingKey, ev.Headers["X-Hookrelay-Ordering-Key"])
			require.Equal(t, "sf", ev.Headers["X-Hookrelay-Carrier"])
		}
	}
	var cursors []string
	cur := ""
	for range 3 {
		p := b.pull(t, ep, w.M1Key, url.Values{"cursor": {cur}, "limit": {"4"}})
		require.Len(t, p.Items, 4)
		require.Equal(t, p.Items[3].Cursor, p.NextCursor)
		record(p.Items)
		cur = p.NextCursor
		cursors = append(cursors, cur)
	}
	p := b.pull(t, ep, w.M1Key, url.Values{"cursor": {cur}, "limit": {"100"}})
	require.Len(t, p.Items, keys*per-12)
	record(p.Items)
	for k := range keys {
		require.Equal(t, []int{0, 1, 2, 3, 4}, seen[fmt.Sprintf("K%d", k)], "key K%d", k)
	}
	end := b.pull(t, ep, w.M1Key, url.Values{"cursor": {p.NextCursor}})
	require.Empty(t, end.Items)
	require.Equal(t, p.NextCursor, end.NextCursor, "an empty pull keeps the cursor")

	// Acknowledge the first two pulls: a pull from the start (a consumer
	// restarting) gets the other seven again, in order, as second attempts.
	require.Equal(t, 8, b.ack(t, ep, w.M1Key, cursors[1]))
	require.Zero(t, b.ack(t, ep, w.M1Key, cursors[0]), "acknowledged already")
	again := b.pull(t, ep, w.M1Key, url.Values{})
	require.Len(t, again.Items, keys*per-8)
	seen = map[string][]int{}
	record(again.Items)
	for _, ev := range again.Items {
		require.Equal(t, 2, ev.Attempt)
		require.Equal(t, "2", ev.Headers["X-Hookrelay-Attempt"])
	}
	for k := range keys {
		s := seen[fmt.Sprintf("K%d", k)]
		require.IsIncreasing(t, s, "key K%d redelivered out of order", k)
	}
	// An acknowledgement in the middle of a pull covers the events up to it.
	mid := again.Items[2]
	require.Equal(t, 3, b.ack(t, ep, w.M1Key, mid.Cursor))
	rest := b.pull(t, ep, w.M1Key, url.Values{})
	require.Len(t, rest.Items, keys*per-11)
	require.Equal(t, again.Items[3].ID, rest.Items[0].ID)
	require.Equal(t, keys*per-11, b.ack(t, ep, w.M1Key, rest.NextCursor))
	require.Empty(t, b.pull(t, ep, w.M1Key, url.Values{}).Items)

	// Acknowledged events leave the queue as delivered, with an attempt.
	st, out := b.call(t, http.MethodGet, "/v1/endpoints/"+ep+"/deliveries?status=delivered", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], keys*per)
	st, out = b.call(t, http.MethodGet, "/v1/endpoints/"+ep, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.EqualValues(t, 0, out["lag"].(map[string]any)["pending"])
}

// TestPullLongPollWakes: a pull that finds nothing waits, and a callback
// stored meanwhile wakes it long before its wait runs out.
func TestPullLongPollWakes(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets})
	w, ep, _ := b.pollWorld(t)
	type result struct {
		page pullPage
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		p := b.pull(t, ep, w.M1Key, url.Values{"wait": {"25s"}})
		done <- result{p, time.Since(start)}
	}()
	testenv.Eventually(t, 10*time.Second, "the pull to wait", func() bool {
		return metricValue(t, b.Registry, "hookrelay_pull_waiting") == 1
	})
	sent := time.Now()
	b.send(t, w.CarrierKey, `{"tracking_no":"W1","status":"in_transit"}`)
	select {
	case r := <-done:
		require.Len(t, r.page.Items, 1)
		require.Equal(t, "W1", r.page.Items[0].OrderingKey)
		require.Less(t, time.Since(sent), 10*time.Second, "woken, not timed out")
		require.Less(t, r.took, 20*time.Second)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting pull was not woken by the callback")
	}
	require.GreaterOrEqual(t, metricValue(t, b.Registry, "hookrelay_pull_wakeups_total"), 1.0)

	// With nothing to wake it, a short wait runs out empty.
	q := url.Values{"wait": {"0.2"}, "cursor": {"" /* from the start: W1 again */}}
	require.Len(t, b.pull(t, ep, w.M1Key, q).Items, 1)
	q.Set("cursor", b.pull(t, ep, w.M1Key, url.Values{}).NextCursor)
	start := time.Now()
	require.Empty(t, b.pull(t, ep, w.M1Key, q).Items)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
}

// TestPullBoundsAndAccess: limit and wait bounds; another merchant's key
// gets 404, a carrier key 403; a push endpoint has no events; a poll
// endpoint takes no URL, no ping, and cannot become a push one.
func TestPullBoundsAndAccess(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets})
	w, ep, _ := b.pollWorld(t)
	for i := range 3 {
		b.send(t, w.CarrierKey, fmt.Sprintf(`{"tracking_no":"B%d"}`, i))
	}
	path := "/v1/endpoints/" + ep + "/events"
	for _, q := range []string{"limit=0", "limit=501", "limit=x", "wait=31s", "wait=-1", "wait=soon", "cursor=%21%21"} {
		st, out := b.call(t, http.MethodGet, path+"?"+q, w.M1Key, nil)
		require.Equal(t, http.StatusBadRequest, st, "%s: %v", q, out)
	}
	require.Len(t, b.pull(t, ep, w.M1Key, url.Values{"limit": {"500"}}).Items, 3)
	require.Len(t, b.pull(t, ep, w.M1Key, url.Values{"limit": {"1"}}).Items, 1)
	// The admin token reaches every endpoint.
	p := b.pull(t, ep, adminToken, url.Values{"limit": {"2"}})
	require.Len(t, p.Items, 2)

	st, out := b.call(t, http.MethodGet, path, w.M2Key, nil)
	require.Equal(t, http.StatusNotFound, st, "%v", out)
	st, _ = b.call(t, http.MethodPost, path+"/ack", w.M2Key, map[string]any{"cursor": p.NextCursor})
	require.Equal(t, http.StatusNotFound, st)
	st, _ = b.call(t, http.MethodGet, path, w.CarrierKey, nil)
	require.Equal(t, http.StatusForbidden, st)
	st, _ = b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1+"/events", w.M1Key, nil)
	require.Equal(t, http.StatusBadRequest, st, "a push endpoint")
	// Another endpoint's cursor is refused.
	ep2 := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{"type": "poll"})["id"].(string)
	st, out = b.call(t, http.MethodPost, "/v1/endpoints/"+ep2+"/events/ack", w.M1Key, map[string]any{"cursor": p.NextCursor})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, _ = b.call(t, http.MethodPost, path+"/ack", w.M1Key, map[string]any{})
	require.Equal(t, http.StatusBadRequest, st)

	st, out = b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"type": "poll", "url": "http://127.0.0.1:9/x"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, out = b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"type": "queue"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, out = b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"type": "push"})
	require.Equal(t, http.StatusBadRequest, st, "a push endpoint needs a url: %v", out)
	st, out = b.call(t, http.MethodPatch, "/v1/endpoints/"+ep, w.M1Key, map[string]any{"type": "push"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, out = b.call(t, http.MethodPatch, "/v1/endpoints/"+ep, w.M1Key, map[string]any{"url": "http://127.0.0.1:9/x"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, out = b.call(t, http.MethodPatch, "/v1/endpoints/"+ep, w.M1Key, map[string]any{"description": "erp"})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, "poll", out["type"])
	st, out = b.call(t, http.MethodPost, "/v1/endpoints/"+ep+"/test", w.M1Key, nil)
	require.Equal(t, http.StatusConflict, st, "%v", out)

	// Lag: three pending, the oldest a moment ago.
	st, out = b.call(t, http.MethodGet, "/v1/endpoints/"+ep, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	lag := out["lag"].(map[string]any)
	require.EqualValues(t, 3, lag["pending"])
	require.NotEmpty(t, lag["oldest"])
	// A disabled poll endpoint serves nothing until enabled.
	st, _ = b.call(t, http.MethodPost, "/v1/endpoints/"+ep+"/disable", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	st, _ = b.call(t, http.MethodGet, path, w.M1Key, nil)
	require.Equal(t, http.StatusConflict, st)
}

// TestPullOffloadedPayload: a payload kept in the S3 store is served byte
// for byte (whitespace and all), and its signature verifies over it.
func TestPullOffloadedPayload(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: privateTargets, Config: api.Config{OffloadBytes: 100}})
	w, ep, secret := b.pollWorld(t)
	large := "{\n  \"tracking_no\": \"L1\",\n  \"pad\": \"" + strings.Repeat("z", 500) + "\", \"html\": \"<b>&</b>\"\n}"
	small := `{"tracking_no":"S1"}`
	b.send(t, w.CarrierKey, large)
	b.send(t, w.CarrierKey, small)
	p := b.pull(t, ep, w.M1Key, url.Values{})
	require.Len(t, p.Items, 2)
	require.Equal(t, large, string(p.Items[0].Body))
	require.Equal(t, small, string(p.Items[1].Body))
	verify(t, secret, p.Items[0])
	verify(t, secret, p.Items[1])
}

// TestPullWaitEndsAtShutdown: a pull waiting for events answers at once,
// empty, when the server stops, so a shutdown does not wait out the pulls.
func TestPullWaitEndsAtShutdown(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, testenv.Options{AdminToken: adminToken})
	reg := prometheus.NewRegistry()
	srv := api.New(env.Logger, api.Config{}, env.DB, env.Payloads, reg, ops.New(env.DB, privateTargets))
	e := echo.New()
	httperr.New(env.Logger).Install(e)
	srv.Register(e)
	stop := testenv.Go(t, "the API", srv.Run)
	hs := httptest.NewServer(e)
	t.Cleanup(hs.Close)
	b := &bundle{URL: hs.URL, Handler: e, DB: env.DB, Registry: reg}
	w, ep, _ := b.pollWorld(t)

	done := make(chan pullPage, 1)
	go func() { done <- b.pull(t, ep, w.M1Key, url.Values{"wait": {"25s"}}) }()
	testenv.Eventually(t, 10*time.Second, "the pull to wait", func() bool {
		return metricValue(t, reg, "hookrelay_pull_waiting") == 1
	})
	start := time.Now()
	require.NoError(t, stop())
	select {
	case p := <-done:
		require.Empty(t, p.Items)
		require.Less(t, time.Since(start), 10*time.Second)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting pull did not answer when the server stopped")
	}
}
