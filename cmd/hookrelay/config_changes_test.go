package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/dispatch"
)

// changeSink records every request a merchant endpoint receives.
type changeSink struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []changeReq
}

type changeReq struct {
	path   string
	header http.Header
	body   []byte
}

func newChangeSink(t *testing.T) *changeSink {
	s := &changeSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, changeReq{path: r.URL.Path, header: r.Header.Clone(), body: b})
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

// byKey returns the requests that carried ordering key key.
func (s *changeSink) byKey(key string) []changeReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []changeReq
	for _, r := range s.reqs {
		if r.header.Get("X-Hookrelay-Ordering-Key") == key {
			out = append(out, r)
		}
	}
	return out
}

func (s *changeSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// signedWith reports whether r's webhook-signature holds a signature by
// secret.
func signedWith(r changeReq, secret string) bool {
	ts, err := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return false
	}
	want := dispatch.Sign([]string{secret}, r.header.Get("webhook-id"), ts, r.body)
	return strings.Contains(" "+r.header.Get("webhook-signature")+" ", " "+want+" ")
}

// TestChangesHoldAcrossProcesses: two serve processes on one database, each
// with an API and a dispatcher. A change is made through process A and, the
// moment its 2xx arrives, a callback is posted to process B: whichever
// dispatcher delivers it, the delivery reflects the change (docs/guarantees.md) —
// signed with the rotated secret, sent to the new URL, not sent at all once
// the endpoint is disabled or deleted. The caches are warmed just before
// each change, so a cache that lags by its TTL serves the old settings.
func TestChangesHoldAcrossProcesses(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "HOOKRELAY_INGEST_CACHE_TTL": "1m"}
	a := startServe(t, env)
	apiA := newSecAPI(t, a.URL)
	sink := newChangeSink(t)
	c := apiA.mustJSON(http.StatusCreated, "POST", "/v1/carriers", secAdminToken, map[string]any{
		"name": "changes", "ordering_key_field": "tracking_no", "event_type_field": "status",
	})
	carrierKey := c["api_key"].(string)
	m := apiA.mustJSON(http.StatusCreated, "POST", "/v1/merchants", secAdminToken, map[string]any{"name": "changes-m"})
	merchantKey := m["api_key"].(string)
	ep := apiA.mustJSON(http.StatusCreated, "POST", "/v1/endpoints", merchantKey, map[string]any{"url": sink.URL + "/old"})
	id, secret := secIDOf(t, ep), ep["secret"].(string)
	b := startServe(t, env)
	apiB := newSecAPI(t, b.URL)

	n := 0
	post := func(api *secAPI) string {
		n++
		key := fmt.Sprintf("CHG-%d", n)
		api.mustJSON(http.StatusAccepted, "POST", "/v1/callbacks", carrierKey, map[string]any{"tracking_no": key, "status": "picked_up"})
		return key
	}
	delivered := func(key string) changeReq {
		t.Helper()
		var got []changeReq
		require.Eventually(t, func() bool { got = sink.byKey(key); return len(got) > 0 }, 30*time.Second, 5*time.Millisecond,
			"callback %s was not delivered", key)
		return got[0]
	}
	// warm sends callbacks through both processes under keys spread over
	// the queues (so both dispatchers hold some) and waits for them.
	warm := func() {
		t.Helper()
		var keys []string
		for range 8 {
			keys = append(keys, post(apiA), post(apiB))
		}
		for _, k := range keys {
			delivered(k)
		}
	}

	warm()
	rot := apiA.mustJSON(http.StatusOK, "POST", "/v1/endpoints/"+id+"/rotate-secret", merchantKey, nil)
	newSecret := rot["secret"].(string)
	require.NotEqual(t, secret, newSecret)
	for range 4 {
		r := delivered(post(apiB))
		require.True(t, signedWith(r, newSecret), "a delivery after the rotation's 2xx is not signed with the new secret: %s", r.header.Get("webhook-signature"))
	}

	warm()
	apiA.mustJSON(http.StatusOK, "PATCH", "/v1/endpoints/"+id, merchantKey, map[string]any{"url": sink.URL + "/new"})
	for range 4 {
		r := delivered(post(apiB))
		require.Equal(t, "/new", r.path, "a delivery after the PATCH's 2xx went to the old URL")
	}

	warm()
	apiA.mustJSON(http.StatusOK, "POST", "/v1/endpoints/"+id+"/disable", merchantKey, nil)
	before := sink.count()
	for range 4 {
		post(apiB)
	}
	time.Sleep(time.Second) // for an attempt that should not come
	require.Equal(t, before, sink.count(), "a delivery attempt started after the disable's 2xx")

	apiA.mustJSON(http.StatusOK, "POST", "/v1/endpoints/"+id+"/enable", merchantKey, nil)
	warm()
	st, data := apiA.do("DELETE", "/v1/endpoints/"+id, merchantKey, nil)
	require.True(t, st/100 == 2, "DELETE: %d %s", st, data)
	before = sink.count()
	for range 4 {
		apiB.do("POST", "/v1/callbacks", carrierKey, map[string]any{"tracking_no": "CHG-gone", "status": "picked_up"})
	}
	time.Sleep(time.Second) // for an attempt that should not come
	require.Equal(t, before, sink.count(), "a delivery attempt started after the delete's 2xx")
}
