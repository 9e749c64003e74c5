package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/ops"
)

// relay is the API and a running dispatcher on one database, as a server
// process runs them.
type relay struct {
	*bundle
}

func startRelay(t *testing.T) relay {
	t.Helper()
	return startRelayWith(t, relayOpts{wake: true})
}

// relayOpts vary startRelay.
type relayOpts struct {
	// wake has the API wake the dispatcher at once; without it the
	// dispatcher finds stored callbacks by polling, as in another process.
	wake bool
	// apiTracer and dispatchTracer trace each side; nil: off.
	apiTracer, dispatchTracer trace.Tracer
}

func startRelayWith(t *testing.T, o relayOpts) relay {
	t.Helper()
	env := testenv.New(t, testenv.Options{AdminToken: adminToken})
	d := dispatch.New(env.Logger, dispatch.Config{AllowPrivateTargets: true, IdlePoll: 20 * time.Millisecond, DrainTimeout: time.Second,
		Tracer: o.dispatchTracer}, env.DB, env.Payloads, nil)
	cfg := api.Config{Tracer: o.apiTracer}
	if o.wake {
		cfg.Batcher.OnStored = func(_ int, queues []int) { d.WakeQueues(queues) }
	}
	srv := api.New(env.Logger, cfg, env.DB, env.Payloads, nil, ops.New(env.DB, ops.Config{Pinger: d, AllowPrivateTargets: true}))
	e := echo.New()
	httperr.New(env.Logger).Install(e)
	srv.Register(e)
	// Stopped in reverse: the API (and its last batch's wake-ups) first.
	testenv.Go(t, "the dispatcher", d.Run)
	testenv.Go(t, "the API", srv.Run)
	hs := httptest.NewServer(e)
	t.Cleanup(hs.Close)
	return relay{&bundle{URL: hs.URL, DB: env.DB, DBURL: env.DBURL, Payloads: env.Payloads, S3: env.S3, Server: srv, Logs: env.Logs}}
}

// One poison callback never fails another: 1,000 valid callbacks of four
// carriers, sent concurrently with 200 poison ones (so that they would share
// group-commit batches), are all accepted and delivered; the poison ones are
// all 400; nothing else fails.
func TestPoisonCallbacksNeverFailOthers(t *testing.T) {
	t.Parallel()
	r := startRelay(t)

	var mu sync.Mutex
	delivered := map[string]int{}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var body struct {
			TrackingNo string `json:"tracking_no"`
		}
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		delivered[body.TrackingNo]++
		mu.Unlock()
	}))
	t.Cleanup(sink.Close)

	var keys []string
	for i := range 4 {
		c := r.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": fmt.Sprintf("carrier-%d", i)})
		keys = append(keys, c["api_key"].(string))
	}
	m := r.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	r.mustCreate(t, "/v1/endpoints", m["api_key"].(string), map[string]any{"url": sink.URL + "/hook"})

	type request struct {
		key    string
		body   []byte
		hdr    []string
		poison bool
	}
	poisons := []func(i int) ([]byte, []string){
		func(i int) ([]byte, []string) { return []byte(fmt.Sprintf(`{"tracking_no":"P%d\u0000"}`, i)), nil },
		func(i int) ([]byte, []string) {
			return []byte(fmt.Sprintf(`{"tracking_no":"P%d","status":"\u0000"}`, i)), nil
		},
		func(i int) ([]byte, []string) {
			return []byte(fmt.Sprintf(`{"tracking_no":"P%d","merchant_id":"m\u0000"}`, i)), nil
		},
		func(i int) ([]byte, []string) {
			return []byte(fmt.Sprintf(`{"tracking_no":"P%d"}`, i)), []string{"Idempotency-Key", "\xff\xfe"}
		},
		func(int) ([]byte, []string) { return []byte(`{}`), []string{"X-Ordering-Key", "\xff\xfe"} },
		func(i int) ([]byte, []string) {
			return []byte(fmt.Sprintf(`{"tracking_no":"P%d"}`, i)), []string{"X-Event-Type", "\xff\xfe"}
		},
		func(i int) ([]byte, []string) {
			return []byte(fmt.Sprintf(`{"tracking_no":"P%d"}`, i)), []string{"X-Merchant-Id", "\xff\xfe"}
		},
	}
	var reqs []request
	const valid, poison = 1000, 200
	for i := range valid {
		reqs = append(reqs, request{key: keys[i%4], body: []byte(fmt.Sprintf(`{"tracking_no":"V%d","status":"delivered"}`, i)),
			hdr: []string{"Idempotency-Key", fmt.Sprintf("v-%d", i)}})
		if i%5 == 4 { // one poison after every five valid ones
			j := i / 5
			body, hdr := poisons[j%len(poisons)](j)
			reqs = append(reqs, request{key: keys[(j+1)%4], body: body, hdr: hdr, poison: true})
		}
	}
	require.Len(t, reqs, valid+poison)

	statuses := make([]int, len(reqs))
	answers := make([]map[string]any, len(reqs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				statuses[i], answers[i] = r.call(t, http.MethodPost, "/v1/callbacks", reqs[i].key, reqs[i].body, reqs[i].hdr...)
			}
		}()
	}
	for i := range reqs {
		work <- i
	}
	close(work)
	wg.Wait()

	counts := map[int]int{}
	for i, q := range reqs {
		counts[statuses[i]]++
		if q.poison {
			require.Equal(t, http.StatusBadRequest, statuses[i], "poison %s %q: %v", q.body, q.hdr, answers[i])
			require.Equal(t, "invalid", errCode(answers[i]))
		} else {
			require.Equal(t, http.StatusAccepted, statuses[i], "valid %s: %v", q.body, answers[i])
		}
	}
	require.Equal(t, map[int]int{http.StatusAccepted: valid, http.StatusBadRequest: poison}, counts)

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered) >= valid
	}, 60*time.Second, 50*time.Millisecond, "every valid callback delivered")
	mu.Lock()
	for i := range valid {
		require.Equal(t, 1, delivered[fmt.Sprintf("V%d", i)], "V%d delivered once", i)
	}
	require.Len(t, delivered, valid, "nothing but the valid callbacks")
	mu.Unlock()
	stats := r.stats(t)
	require.Equal(t, float64(valid), stats["messages_today_utc"])
	require.Equal(t, float64(0), stats["dead_letters"])
	require.Eventually(t, func() bool {
		p, err := r.DB.StatsGet(context.Background())
		return err == nil && p.PendingDeliveries == 0
	}, 10*time.Second, 50*time.Millisecond, "no delivery left pending")
	require.NotContains(t, r.Logs.String(), `"level":"ERROR"`)
}
