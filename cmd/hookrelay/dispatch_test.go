package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// apiCall sends a JSON request with a bearer token and decodes the answer.
func apiCall(t *testing.T, method, url, token string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := apitest.Client(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, out), string(raw))
	}
	return resp.StatusCode
}

// routeToSink registers a carrier, a merchant and an endpoint at url on s
// and returns the carrier's and the merchant's API keys and the endpoint id.
func routeToSink(t *testing.T, s *testServer, url string) (carrierKey, merchantKey, endpointID string) {
	t.Helper()
	admin := "hra_test_admin_token_0123456789"
	var carrier struct {
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/carriers", admin,
		map[string]any{"name": "acme", "ordering_key_field": "tracking_no", "event_type_field": "status"}, &carrier))
	var merchant struct {
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/merchants", admin, map[string]any{"name": "shop"}, &merchant))
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/endpoints", merchant.APIKey,
		map[string]any{"url": url}, &ep))
	require.NotEmpty(t, ep.Secret)
	return carrier.APIKey, merchant.APIKey, ep.ID
}

// TestServeWakesItsDispatcher: with the api and dispatch roles in one
// process, a stored callback wakes the idle dispatcher (the wake-up counter
// moves after every queue is held), so it is delivered without waiting out the idle pause (10 s here).
func TestServeWakesItsDispatcher(t *testing.T) {
	t.Parallel()
	delivered := make(chan time.Time, 1)
	sinkSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case delivered <- time.Now():
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(sinkSrv.Close)
	s := startServe(t, map[string]string{"HOOKRELAY_DISPATCH_IDLE_POLL": "10s"})
	carrierKey, _, _ := routeToSink(t, s, sinkSrv.URL+"/hook")
	metrics := func() string {
		resp, err := http.Get(s.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(raw)
	}
	held := regexp.MustCompile(`(?m)^hookrelay_queues_held 32$`)
	testenv.Eventually(t, 20*time.Second, "the dispatcher to hold every queue", func() bool { return held.MatchString(metrics()) })
	// Its claims found nothing: it is backing off. (A claim loop's pause is
	// not seen from outside the process; a claim that races the post
	// delivers it without a wake-up, which the counter below would miss.)
	time.Sleep(300 * time.Millisecond)
	wakeups := regexp.MustCompile(`(?m)^hookrelay_dispatch_wakeups_total (\d+)$`)
	before := wakeups.FindStringSubmatch(metrics())
	require.NotNil(t, before)

	posted := time.Now()
	require.Equal(t, http.StatusAccepted, apiCall(t, "POST", s.URL+"/v1/callbacks", carrierKey,
		map[string]any{"tracking_no": "WAKE1", "status": "moving"}, nil))
	select {
	case at := <-delivered:
		require.Less(t, at.Sub(posted), 2*time.Second)
	case <-time.After(15 * time.Second):
		t.Fatal("not delivered")
	}
	after := wakeups.FindStringSubmatch(metrics())
	require.NotNil(t, after)
	require.NotEqual(t, before[1], after[1], "the stored callback woke the dispatcher")
}

// TestServeAnnouncesToOtherProcesses: with the api and dispatch roles in
// separate processes (two serve runs on one database), a stored callback is
// announced by NOTIFY and the other process's idle dispatcher delivers it
// without waiting out its idle pause (10 s here); with HOOKRELAY_NOTIFY off
// it waits.
func TestServeAnnouncesToOtherProcesses(t *testing.T) {
	t.Parallel()
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			t.Parallel()
			delivered := make(chan time.Time, 1)
			sinkSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case delivered <- time.Now():
				default:
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(sinkSrv.Close)
			env := map[string]string{"DATABASE_URL": dbtest.NewURL(t), "HOOKRELAY_DISPATCH_IDLE_POLL": "10s",
				"HOOKRELAY_NOTIFY": strconv.FormatBool(notify)}
			api := startServe(t, env, "--roles", "api")
			disp := startServe(t, env, "--roles", "dispatch")
			carrierKey, _, _ := routeToSink(t, api, sinkSrv.URL+"/hook")
			metric := func(name string) float64 { return metricValue(t, disp.URL, name) }
			testenv.Eventually(t, 20*time.Second, "the dispatcher to hold every queue (and listen)", func() bool {
				return metric("hookrelay_queues_held") == 32 && (!notify || metric("hookrelay_dispatch_listening") == 1)
			})
			// Its claims found nothing: it is backing off (not seen from
			// outside the process).
			time.Sleep(300 * time.Millisecond)

			posted := time.Now()
			require.Equal(t, http.StatusAccepted, apiCall(t, "POST", api.URL+"/v1/callbacks", carrierKey,
				map[string]any{"tracking_no": "ANNOUNCE1", "status": "moving"}, nil))
			if !notify {
				select {
				case <-delivered:
					t.Fatal("delivered before the idle pause ended, with nothing announced")
				case <-time.After(2 * time.Second):
				}
				require.Zero(t, metric("hookrelay_dispatch_listening"))
				return
			}
			select {
			case at := <-delivered:
				require.Less(t, at.Sub(posted), 2*time.Second)
			case <-time.After(15 * time.Second):
				t.Fatal("not delivered")
			}
			require.Positive(t, metric("hookrelay_dispatch_notifications_total"))
		})
	}
}

// TestServeDeliversCallbacksInOrder runs `hookrelay serve` with every role:
// callbacks posted by a carrier reach the merchant's loopback endpoint,
// signed, once each and in order per tracking number; the endpoint test ping
// goes through the dispatcher's sender.
func TestServeDeliversCallbacksInOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	sinkSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			TrackingNo string `json:"tracking_no"`
			Seq        int    `json:"seq"`
			Type       string `json:"type"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		if r.Header.Get("Webhook-Signature") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		if body.Type != "ping" {
			got = append(got, fmt.Sprintf("%s/%d", body.TrackingNo, body.Seq))
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(sinkSrv.Close)

	s := startServe(t, map[string]string{"HOOKRELAY_LEASE": "2s"})
	carrierKey, merchantKey, epID := routeToSink(t, s, sinkSrv.URL+"/hook")

	var ping map[string]any
	require.Equal(t, http.StatusOK, apiCall(t, "POST", s.URL+"/v1/endpoints/"+epID+"/test", merchantKey, nil, &ping))
	require.Equal(t, true, ping["success"], "%v", ping)

	const keys, perKey = 4, 5
	for i := range perKey {
		for k := range keys {
			code := apiCall(t, "POST", s.URL+"/v1/callbacks", carrierKey,
				map[string]any{"tracking_no": fmt.Sprintf("TN%d", k), "status": "moving", "seq": i}, nil)
			require.Equal(t, http.StatusAccepted, code)
		}
	}
	testenv.EventuallyErr(t, 30*time.Second, func() error {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n < keys*perKey {
			return fmt.Errorf("delivered %d of %d", n, keys*perKey)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, keys*perKey)
	next := map[string]int{}
	for _, g := range got {
		var tn string
		var seq int
		_, err := fmt.Sscanf(g, "TN%s", &tn)
		require.NoError(t, err)
		var k int
		_, err = fmt.Sscanf(g, "TN%d/%d", &k, &seq)
		require.NoError(t, err)
		key := fmt.Sprint(k)
		require.Equal(t, next[key], seq, "order of TN%s", key)
		next[key]++
	}
}
