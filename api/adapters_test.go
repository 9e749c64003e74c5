package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// courierCarrier makes a carrier whose raw ordering key is waybill.no and
// returns its id and key.
func courierCarrier(t *testing.T, r relay, name string) (id, key string) {
	t.Helper()
	c := r.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": name, "ordering_key_field": "waybill.no"})
	return c["id"].(string), c["api_key"].(string)
}

// createAdapter stores a version and returns its number.
func createAdapter(t *testing.T, r relay, carrierID, source string) int {
	t.Helper()
	out := r.mustCreate(t, "/v1/carriers/"+carrierID+"/adapters", adminToken, map[string]any{"source": source, "note": "test"})
	return int(out["version"].(float64))
}

func activate(t *testing.T, r relay, carrierID string, version int) map[string]any {
	t.Helper()
	st, out := r.call(t, http.MethodPost, fmt.Sprintf("/v1/carriers/%s/adapters/%d/activate", carrierID, version), adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	return out
}

func sendCallback(t *testing.T, r relay, key string, body []byte) (int, map[string]any) {
	t.Helper()
	return r.call(t, http.MethodPost, "/v1/callbacks", key, body)
}

// The lifecycle of a carrier's adapter: a version is created inactive
// (empty or uncompilable sources refused), dry-run over the stored
// callbacks (an offloaded one included) with a diff against the active
// version, activated, rolled back; each stored message records the version
// that made its event beside its original body.
func TestAdapterLifecycle(t *testing.T) {
	t.Parallel()
	r := startAdapterRelay(t)
	carrierID, key := courierCarrier(t, r, "zt")
	base := "/v1/carriers/" + carrierID + "/adapters"

	// Refused sources.
	st, out := r.call(t, http.MethodPost, base, adminToken, nil)
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, out = r.call(t, http.MethodPost, base, adminToken, map[string]any{"source": "  "})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	st, out = r.call(t, http.MethodPost, base, adminToken, map[string]any{"source": "function transform(cb) {\n  return {\n}}}"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)
	require.Contains(t, out["error"].(map[string]any)["message"], "line 3")

	// Callbacks stored before any adapter: three inline, one offloaded
	// (over the 8 KiB inline bound), one heartbeat.
	for i, body := range [][]byte{
		courierBody("ZT1", 10, ""), courierBody("ZT2", 30, ""), courierBody("ZT3", 60, ""),
		courierBody("ZT4", 50, `,"pad":"`+strings.Repeat("x", 10000)+`"`),
		[]byte(`{"kind":"heartbeat","waybill":{"no":"HB"}}`),
	} {
		st, out := sendCallback(t, r, key, body)
		require.Equal(t, http.StatusAccepted, st, "callback %d: %v", i, out)
		_, has := out["adapter_version"]
		require.False(t, has, "no adapter yet")
	}

	v1 := createAdapter(t, r, carrierID, courierAdapter)
	// v2 reads code 30 as out_for_delivery: one event changes.
	v2 := createAdapter(t, r, carrierID, strings.Replace(courierAdapter, `30: "in_transit"`, `30: "out_for_delivery"`, 1))
	require.Equal(t, []int{1, 2}, []int{v1, v2})

	st, out = r.call(t, http.MethodGet, base, adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Nil(t, out["active_version"])
	require.Equal(t, "refuse", out["on_failure"])
	require.Len(t, out["items"], 2)

	st, out = r.call(t, http.MethodGet, fmt.Sprintf("%s/%d", base, v2), adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Contains(t, out["source"], `30: "out_for_delivery"`)
	require.Equal(t, false, out["active"])

	// Dry run of v1 with no active version: every stored callback, the
	// offloaded one read from the payload store.
	st, out = r.call(t, http.MethodPost, fmt.Sprintf("%s/%d/dry-run", base, v1), adminToken, map[string]any{"limit": 10})
	require.Equal(t, http.StatusOK, st, "%v", out)
	sum := out["summary"].(map[string]any)
	require.Equal(t, map[string]any{"callbacks": 5.0, "ok": 4.0, "dropped": 1.0, "failed": 0.0, "schema_failed": 0.0,
		"limit_failed": 0.0, "same": 0.0, "changed": 0.0}, sum)
	require.Nil(t, out["active_version"])
	items := out["items"].([]any)
	var sawOffloaded bool
	for _, it := range items {
		res := it.(map[string]any)["result"].(map[string]any)
		if res["outcome"] != "event" {
			continue
		}
		ev := res["event"].(map[string]any)
		require.Equal(t, "tracking.updated", ev["type"])
		require.Equal(t, "zt", ev["carrier"])
		require.Equal(t, "2026-12-04T00:15:00Z", ev["timestamp"])
		if ev["ordering_key"] == "ZT4" {
			sawOffloaded = true
			require.Equal(t, "out_for_delivery", ev["data"].(map[string]any)["status"])
		}
	}
	require.True(t, sawOffloaded, "the offloaded callback was run")
	st, out = r.call(t, http.MethodPost, fmt.Sprintf("%s/%d/dry-run", base, v1), adminToken, map[string]any{"limit": 1001})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)

	// Activate v1; a dry run of v2 differs from it on one callback.
	out = activate(t, r, carrierID, v1)
	require.Equal(t, 1.0, out["active_version"])
	st, out = r.call(t, http.MethodPost, fmt.Sprintf("%s/%d/dry-run", base, v2), adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, 1.0, out["active_version"])
	sum = out["summary"].(map[string]any)
	require.Equal(t, 1.0, sum["changed"], "%v", sum)
	require.Equal(t, 4.0, sum["same"], "%v", sum)
	for _, it := range out["items"].([]any) {
		item := it.(map[string]any)
		if item["diff"] == "changed" {
			require.Equal(t, "in_transit", item["active"].(map[string]any)["event"].(map[string]any)["data"].(map[string]any)["status"])
			require.Equal(t, "out_for_delivery", item["result"].(map[string]any)["event"].(map[string]any)["data"].(map[string]any)["status"])
		}
	}

	// A callback now goes through v1, recorded on its message beside the
	// original body.
	body := courierBody("ZT5", 30, "")
	st, out = sendCallback(t, r, key, body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, 1.0, out["adapter_version"])
	require.Equal(t, "tracking.updated", out["event_type"])
	st, msg := r.call(t, http.MethodGet, "/v1/messages/"+out["message_id"].(string), adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", msg)
	require.Equal(t, 1.0, msg["adapter_version"])
	require.Equal(t, "ZT5", msg["ordering_key"])
	require.Equal(t, "in_transit", msg["event"].(map[string]any)["data"].(map[string]any)["status"])
	raw, _ := json.Marshal(msg["payload"])
	require.JSONEq(t, string(body), string(raw), "the original body is kept as it came")

	// Activate v2, then roll back to v1.
	require.Equal(t, 2.0, activate(t, r, carrierID, v2)["active_version"])
	_, out = sendCallback(t, r, key, courierBody("ZT6", 30, ""))
	require.Equal(t, 2.0, out["adapter_version"])
	require.Equal(t, 1.0, activate(t, r, carrierID, v1)["active_version"])
	_, out = sendCallback(t, r, key, courierBody("ZT7", 30, ""))
	require.Equal(t, 1.0, out["adapter_version"])
	st, out = r.call(t, http.MethodPost, base+"/9/activate", adminToken, nil)
	require.Equal(t, http.StatusNotFound, st, "%v", out)

	// The try shows the event the active adapter makes.
	st, out = r.call(t, http.MethodPost, "/v1/carriers/"+carrierID+"/try", adminToken, map[string]any{"body": json.RawMessage(courierBody("ZT8", 60, ""))})
	require.Equal(t, http.StatusOK, st, "%v", out)
	ad := out["adapter"].(map[string]any)
	require.Equal(t, 1.0, ad["version"])
	require.Equal(t, "delivered", ad["event"].(map[string]any)["data"].(map[string]any)["status"])

	// Deactivated: callbacks are relayed as they are.
	st, out = r.call(t, http.MethodPost, base+"/deactivate", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Nil(t, out["active_version"])
	_, out = sendCallback(t, r, key, courierBody("ZT9", 30, ""))
	_, has := out["adapter_version"]
	require.False(t, has)
}

// A canonical and a raw endpoint of the same carrier: the raw one gets the
// carrier's body byte for byte, the canonical one the event; both signed.
// A canonical endpoint's filter and event types read the event; a dropped
// callback reaches the raw endpoint only.
func TestAdapterFormatsEndToEnd(t *testing.T) {
	t.Parallel()
	r := startAdapterRelay(t)
	s := newSink(t)
	carrierID, key := courierCarrier(t, r, "yd")
	m := r.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	mkey := m["api_key"].(string)
	rawEP := r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/raw"})
	require.Equal(t, "raw", rawEP["format"], "raw unless asked")
	canon := r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/canonical", "format": "canonical"})
	require.Equal(t, "canonical", canon["format"])
	r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/delivered-only", "format": "canonical",
		"filter": `data.status == "delivered"`})
	r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/other-type", "format": "canonical",
		"event_types": []string{"parcel.weighed"}})
	poll := r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"type": "poll", "format": "canonical"})
	r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/batch", "format": "canonical",
		"batch": map[string]any{"max_events": 10, "max_wait": "0s"}})
	st, out := r.call(t, http.MethodPost, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/x", "format": "xml"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)

	activate(t, r, carrierID, createAdapter(t, r, carrierID, courierAdapter))

	body := courierBody("YD1", 60, "")
	st, out = sendCallback(t, r, key, body)
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, 5.0, out["deliveries"], "raw, canonical, delivered-only, poll, batch")
	msgID := "msg_" + out["message_id"].(string)
	// A heartbeat: dropped by the adapter, relayed to the raw endpoint.
	st, out = sendCallback(t, r, key, []byte(`{"kind":"heartbeat","waybill":{"no":"HB1"}}`))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, 1.0, out["deliveries"])
	// In transit: not for the delivered-only endpoint.
	st, out = sendCallback(t, r, key, courierBody("YD2", 30, ""))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, 4.0, out["deliveries"])

	// Each endpoint's deliveries of different ordering keys go in any
	// order: pick those of the first callback by its webhook id.
	of := func(rs []received) received {
		t.Helper()
		for _, rc := range rs {
			if rc.Header.Get("Webhook-Id") == msgID {
				return rc
			}
		}
		t.Fatalf("no delivery of %s among %d", msgID, len(rs))
		return received{}
	}
	raw := of(s.waitFor(t, "/raw", 3))
	canonical := of(s.waitFor(t, "/canonical", 2))
	of(s.waitFor(t, "/delivered-only", 1))
	require.Equal(t, body, raw.Body, "the raw endpoint gets the body as it came")
	require.Empty(t, s.at("/other-type"))

	verify := func(rcv received, secret string) {
		t.Helper()
		ts, err := strconv.ParseInt(rcv.Header.Get("Webhook-Timestamp"), 10, 64)
		require.NoError(t, err)
		require.Equal(t, dispatch.Sign([]string{secret}, rcv.Header.Get("Webhook-Id"), ts, rcv.Body), rcv.Header.Get("Webhook-Signature"))
	}
	verify(raw, rawEP["secret"].(string))
	verify(canonical, canon["secret"].(string))
	require.Equal(t, "tracking.updated", canonical.Header.Get("X-Hookrelay-Event-Type"))
	require.Equal(t, "YD1", canonical.Header.Get("X-Hookrelay-Ordering-Key"))
	var ev map[string]any
	require.NoError(t, json.Unmarshal(canonical.Body, &ev))
	require.Equal(t, "tracking.updated", ev["type"])
	require.Equal(t, "2026-12-04T00:15:00Z", ev["timestamp"])
	require.Equal(t, "yd", ev["carrier"])
	require.Equal(t, 1.0, ev["adapter_version"])
	require.Equal(t, map[string]any{"tracking_number": "YD1", "carrier": "yd", "status": "delivered", "status_text": "派送中",
		"occurred_at": "2026-12-04T08:15:00+08:00"}, ev["data"])

	// A canonical batch endpoint gets the events in its arrays.
	var batched []map[string]any
	testenv.Eventually(t, 15*time.Second, "two batched events", func() bool {
		batched = nil
		for _, rc := range s.at("/batch") {
			var items []map[string]any
			require.NoError(t, json.Unmarshal(rc.Body, &items))
			batched = append(batched, items...)
		}
		return len(batched) == 2
	})
	for _, it := range batched {
		require.Equal(t, "tracking.updated", it["event_type"])
		require.Equal(t, "tracking.updated", it["body"].(map[string]any)["type"])
	}

	// A pull of a canonical poll endpoint serves the same body.
	st, page := r.call(t, http.MethodGet, "/v1/endpoints/"+poll["id"].(string)+"/events?limit=10", mkey, nil)
	require.Equal(t, http.StatusOK, st, "%v", page)
	items := page["items"].([]any)
	require.Len(t, items, 2, "YD1 and YD2, not the heartbeat")
	first := items[0].(map[string]any)
	require.Equal(t, msgID, first["id"])
	require.Equal(t, "tracking.updated", first["event_type"])
	pulled, _ := json.Marshal(first["body"])
	require.JSONEq(t, string(canonical.Body), string(pulled))
}

// A callback the adapter fails on, or whose event fails its schema, is
// refused with 422 naming the error and logged in the carrier's refusals;
// with park, it is accepted for the raw endpoints and parked, and
// unparked once a fixed version is active.
func TestAdapterFailureRefuseAndPark(t *testing.T) {
	t.Parallel()
	r := startAdapterRelay(t)
	s := newSink(t)
	carrierID, key := courierCarrier(t, r, "jt")
	m := r.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	mkey := m["api_key"].(string)
	r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/raw"})
	r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/canonical", "format": "canonical"})
	activate(t, r, carrierID, createAdapter(t, r, carrierID, courierAdapter))

	st, out := sendCallback(t, r, key, courierBody("JT1", 10, `,"boom":"no scan"`))
	require.Equal(t, http.StatusUnprocessableEntity, st, "%v", out)
	require.Equal(t, "unprocessable", errCode(out))
	require.Contains(t, out["error"].(map[string]any)["message"], "boom: no scan")
	ref := r.waitRefusal(t, carrierID, "adapter_failed")
	require.Equal(t, 422.0, ref["status"])
	require.Contains(t, ref["message"], "boom: no scan")

	st, out = sendCallback(t, r, key, courierBody("JT2", 10, `,"bad_status":true`))
	require.Equal(t, http.StatusUnprocessableEntity, st, "%v", out)
	require.Contains(t, out["error"].(map[string]any)["message"], "schema")
	r.waitRefusal(t, carrierID, "schema_invalid")

	// Park instead.
	st, out = r.call(t, http.MethodPatch, "/v1/carriers/"+carrierID, adminToken, map[string]any{"adapter_on_failure": "park"})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, "park", out["adapter_on_failure"])
	st, out = r.call(t, http.MethodPatch, "/v1/carriers/"+carrierID, adminToken, map[string]any{"adapter_on_failure": "drop"})
	require.Equal(t, http.StatusBadRequest, st, "%v", out)

	st, out = sendCallback(t, r, key, courierBody("JT3", 10, `,"boom":"again"`))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Contains(t, out["parked"], "boom: again")
	require.Equal(t, 1.0, out["deliveries"], "the raw endpoint only")
	s.waitFor(t, "/raw", 1)
	require.Empty(t, s.at("/canonical"))

	st, out = r.call(t, http.MethodGet, "/v1/carriers/"+carrierID+"/parked", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Len(t, out["items"], 1)
	require.Contains(t, out["items"].([]any)[0].(map[string]any)["error"], "boom: again")

	// Still failing: stays parked.
	st, out = r.call(t, http.MethodPost, "/v1/carriers/"+carrierID+"/parked/unpark", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, map[string]any{"unparked": 0.0, "failed": 1.0, "deliveries": 0.0, "last_error": out["last_error"]}, out)

	// Fixed (boom ignored) and activated: unparked, the event delivered.
	fixed := strings.Replace(courierAdapter, `throw new Error("boom: " + b.boom);`, `// ignored`, 1)
	activate(t, r, carrierID, createAdapter(t, r, carrierID, fixed))
	st, out = r.call(t, http.MethodPost, "/v1/carriers/"+carrierID+"/parked/unpark", adminToken, map[string]any{"limit": 10})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, 1.0, out["unparked"], "%v", out)
	require.Equal(t, 1.0, out["deliveries"], "%v", out)
	got := s.waitFor(t, "/canonical", 1)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(got[0].Body, &ev))
	require.Equal(t, "JT3", ev["ordering_key"])
	require.Equal(t, 2.0, ev["adapter_version"])
	st, out = r.call(t, http.MethodGet, "/v1/carriers/"+carrierID+"/parked", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Empty(t, out["items"])
}

// A runaway adapter (an endless loop) is stopped at its time limit and
// only its own callbacks are refused (adapter_limit); the other callbacks,
// sent at the same time through the running intake, are all accepted.
func TestRunawayAdapterRefusedAlone(t *testing.T) {
	t.Parallel()
	r := startAdapterRelay(t)
	carrierID, key := courierCarrier(t, r, "runaway")
	activate(t, r, carrierID, createAdapter(t, r, carrierID, courierAdapter))

	const good, bad = 40, 4
	var wg sync.WaitGroup
	codes := make([]int, good+bad)
	msgs := make([]string, good+bad)
	for i := range good + bad {
		wg.Add(1)
		go func() {
			defer wg.Done()
			extra := ""
			if i >= good {
				extra = `,"spin":true`
			}
			st, out := sendCallback(t, r, key, courierBody(fmt.Sprintf("R%d", i), 30, extra))
			codes[i] = st
			if e, ok := out["error"].(map[string]any); ok {
				msgs[i] = e["message"].(string)
			}
		}()
	}
	wg.Wait()
	for i := range good {
		require.Equal(t, http.StatusAccepted, codes[i], "callback %d: %s", i, msgs[i])
	}
	for i := good; i < good+bad; i++ {
		require.Equal(t, http.StatusUnprocessableEntity, codes[i], "callback %d", i)
		require.Contains(t, msgs[i], "limit")
	}
	r.waitRefusal(t, carrierID, "adapter_limit")
	// The service is up and the adapter works for the next callback.
	st, out := sendCallback(t, r, key, courierBody("R-after", 60, ""))
	require.Equal(t, http.StatusAccepted, st, "%v", out)
}

// A carrier with an adapter may post forms: the worked Dongfang example's
// form callback becomes its event for the canonical endpoint (the raw one,
// which is sent JSON, gets nothing); without an adapter the form is 415.
func TestAdapterFormCallback(t *testing.T) {
	t.Parallel()
	r := startAdapterRelay(t)
	s := newSink(t)
	carrierID, key := courierCarrier(t, r, "dongfang")
	m := r.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "HZ-TMALL-0815"})
	mkey := m["api_key"].(string)
	r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/raw"})
	r.mustCreate(t, "/v1/endpoints", mkey, map[string]any{"url": s.URL + "/canonical", "format": "canonical"})
	form, err := os.ReadFile("../docs/examples/adapters/dongfang/callback.form")
	require.NoError(t, err)
	want, err := os.ReadFile("../docs/examples/adapters/dongfang/event.json")
	require.NoError(t, err)
	formType := []string{"Content-Type", "application/x-www-form-urlencoded"}

	st, out := r.call(t, http.MethodPost, "/v1/callbacks", key, form, formType...)
	require.Equal(t, http.StatusUnsupportedMediaType, st, "%v", out)

	source, err := os.ReadFile("../docs/examples/adapters/dongfang/adapter.js")
	require.NoError(t, err)
	activate(t, r, carrierID, createAdapter(t, r, carrierID, string(source)))
	st, out = r.call(t, http.MethodPost, "/v1/callbacks", key, form, formType...)
	require.Equal(t, http.StatusAccepted, st, "%v", out)
	require.Equal(t, 1.0, out["deliveries"], "the canonical endpoint only")

	got := s.waitFor(t, "/canonical", 1)
	var ev, exp map[string]any
	require.NoError(t, json.Unmarshal(got[0].Body, &ev))
	require.NoError(t, json.Unmarshal(want, &exp))
	require.Equal(t, exp["type"], ev["type"])
	require.Equal(t, exp["ordering_key"], ev["ordering_key"])
	require.Equal(t, exp["merchant"], ev["merchant"])
	require.Equal(t, exp["data"], ev["data"])
	require.Equal(t, "2026-12-04T00:15:00Z", ev["timestamp"])
	require.Empty(t, s.at("/raw"))
}
