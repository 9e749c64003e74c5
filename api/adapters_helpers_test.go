package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/eventtype"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/ops"
)

// startAdapterRelay is the API and a running dispatcher on one database,
// its refusal log written at once, with the event type tracking.updated
// (the schema of docs/examples) in the catalog that ingest, tries and dry
// runs validate against.
func startAdapterRelay(t *testing.T) relay {
	t.Helper()
	env := testenv.New(t, testenv.Options{AdminToken: adminToken})
	d := dispatch.New(env.Logger, dispatch.Config{AllowPrivateTargets: true, IdlePoll: 20 * time.Millisecond, DrainTimeout: time.Second},
		env.DB, env.Payloads, nil)
	catalog := eventtype.NewCatalog(env.DB, eventtype.Config{})
	cfg := api.Config{EventTypes: catalog}
	cfg.Watch = ingest.WatchConfig{FlushInterval: 5 * time.Millisecond, StatsInterval: 5 * time.Millisecond}
	cfg.Batcher.OnStored = func(_ int, queues []int) { d.WakeQueues(queues) }
	srv := api.New(env.Logger, cfg, env.DB, env.Payloads, nil,
		ops.New(env.DB, ops.Config{Pinger: d, AllowPrivateTargets: true, EventValidator: catalog, Payloads: env.Payloads}))
	e := echo.New()
	httperr.New(env.Logger).Install(e)
	srv.Register(e)
	testenv.Go(t, "the dispatcher", d.Run)
	testenv.Go(t, "the API", srv.Run)
	hs := httptest.NewServer(e)
	t.Cleanup(hs.Close)
	r := relay{&bundle{URL: hs.URL, Handler: e, DB: env.DB, DBURL: env.DBURL, Payloads: env.Payloads, S3: env.S3, Server: srv, Logs: env.Logs}}
	r.mustCreate(t, "/v1/event-types", adminToken, map[string]any{"name": "tracking.updated", "schema": trackingSchema(t)})
	return r
}

// received is a request a sink got.
type received struct {
	Header http.Header
	Body   []byte
}

// sink records the requests it gets, by path.
type sink struct {
	*httptest.Server
	mu  sync.Mutex
	got map[string][]received
}

func newSink(t *testing.T) *sink {
	s := &sink{got: map[string][]received{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got[r.URL.Path] = append(s.got[r.URL.Path], received{Header: r.Header.Clone(), Body: b})
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) at(path string) []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got[path]...)
}

// waitFor waits until path got n requests and returns them.
func (s *sink) waitFor(t *testing.T, path string, n int) []received {
	t.Helper()
	testenv.Eventually(t, 15*time.Second, fmt.Sprintf("%d requests at %s", n, path), func() bool { return len(s.at(path)) >= n })
	return s.at(path)
}

// An adapter of a fictional courier: numeric status codes, status text in
// Chinese, local times, and a body field that makes it fail (boom), loop
// (spin) or emit an event its schema refuses (bad_status).
const courierAdapter = `
const STATUS = {10: "picked_up", 30: "in_transit", 50: "out_for_delivery", 60: "delivered"};

function transform(cb) {
  const b = cb.body;
  if (b.kind === "heartbeat") {
    return null;
  }
  if (b.boom) {
    throw new Error("boom: " + b.boom);
  }
  if (b.spin) {
    while (true) {}
  }
  return {
    type: "tracking.updated",
    ordering_key: b.waybill.no,
    occurred_at: hookrelay.localTime(b.scan.time, "Asia/Shanghai"),
    data: {
      tracking_number: b.waybill.no,
      carrier: cb.carrier,
      status: b.bad_status ? "teleported" : STATUS[b.scan.code],
      status_text: b.scan.text,
      occurred_at: hookrelay.localTime(b.scan.time, "Asia/Shanghai"),
    },
  };
}
`

// courierBody is a callback of that courier.
func courierBody(waybill string, code int, extra string) []byte {
	return []byte(fmt.Sprintf(`{"waybill":{"no":%q},"scan":{"code":%d,"text":"派送中","time":"2026-12-04 08:15:00"}%s}`, waybill, code, extra))
}
