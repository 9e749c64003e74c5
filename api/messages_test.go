package api_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func TestMessageSearch(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	send := func(merchant, key, status string) string {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey,
			[]byte(`{"tracking_no":"`+key+`","status":"`+status+`"}`), "X-Merchant-Id", merchant)
		require.Equal(t, http.StatusAccepted, st, "%v", out)
		return out["message_id"].(string)
	}
	search := func(token string, q url.Values) (int, map[string]any) {
		return b.call(t, http.MethodGet, "/v1/messages?"+q.Encode(), token, nil)
	}
	items := func(token string, q url.Values) []map[string]any {
		t.Helper()
		st, out := search(token, q)
		require.Equal(t, http.StatusOK, st, "%v", out)
		var ms []map[string]any
		for _, it := range out["items"].([]any) {
			ms = append(ms, it.(map[string]any))
		}
		return ms
	}
	ids := func(ms []map[string]any) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m["id"].(string))
		}
		return out
	}
	first := send(w.M1, "SF100", "picked_up")
	dbtest.Finish(t, b.DB, "SF100", db.AckSuccess)
	second := send(w.M1, "SF100", "delivered")
	other := send(w.M2, "SF200", "picked_up")
	dbtest.Finish(t, b.DB, "SF200", db.AckDead)

	// Exact key, newest first, with the deliveries and their states.
	ms := items(adminToken, url.Values{"ordering_key": {"SF100"}})
	require.Equal(t, []string{second, first}, ids(ms))
	require.Equal(t, "SF100", ms[0]["ordering_key"])
	require.Equal(t, "delivered", ms[0]["event_type"])
	require.Equal(t, w.CarrierID, ms[0]["carrier_id"])
	require.Equal(t, false, ms[0]["offloaded"])
	d := ms[0]["deliveries"].([]any)[0].(map[string]any)
	require.Equal(t, w.E1, d["endpoint_id"])
	require.Equal(t, "pending", d["status"])
	require.NotEmpty(t, d["next_attempt_at"])
	d = ms[1]["deliveries"].([]any)[0].(map[string]any)
	require.Equal(t, "delivered", d["status"])
	require.Equal(t, float64(1), d["attempts"])
	require.Empty(t, items(adminToken, url.Values{"ordering_key": {"SF1"}}), "exact match only")

	// Each filter.
	require.Equal(t, []string{other, second, first}, ids(items(adminToken, url.Values{})))
	require.Equal(t, []string{first}, ids(items(adminToken, url.Values{"ordering_key": {"SF100"}, "status": {"delivered"}})))
	require.Equal(t, []string{other}, ids(items(adminToken, url.Values{"status": {"dead"}})))
	require.Equal(t, []string{other}, ids(items(adminToken, url.Values{"endpoint_id": {w.E2}})))
	require.Equal(t, []string{second}, ids(items(adminToken, url.Values{"event_type": {"delivered"}})))
	require.Equal(t, []string{other, second, first}, ids(items(adminToken, url.Values{"carrier_id": {w.CarrierID}})))
	require.Empty(t, items(adminToken, url.Values{"carrier_id": {"999999"}}))
	past := time.Now().Add(-48 * time.Hour)
	require.Empty(t, items(adminToken, url.Values{"ordering_key": {"SF100"},
		"since": {past.Format(time.RFC3339)}, "until": {past.Add(time.Hour).Format(time.RFC3339)}}))
	require.Len(t, items(adminToken, url.Values{"ordering_key": {"SF100"},
		"since": {past.Format(time.RFC3339)}, "until": {time.Now().Add(time.Hour).Format(time.RFC3339Nano)}}), 2,
		"a search by key may cover more than a day")

	// Cursor paging.
	var got []string
	q := url.Values{"limit": {"1"}}
	for range 5 {
		st, out := search(adminToken, q)
		require.Equal(t, http.StatusOK, st, "%v", out)
		for _, it := range out["items"].([]any) {
			got = append(got, it.(map[string]any)["id"].(string))
		}
		next := out["next_cursor"].(string)
		if next == "" {
			break
		}
		q.Set("cursor", next)
	}
	require.Equal(t, []string{other, second, first}, got)

	// Merchant scoping: only messages with a delivery to its endpoints.
	require.Equal(t, []string{second, first}, ids(items(w.M1Key, url.Values{})))
	require.Equal(t, []string{other}, ids(items(w.M2Key, url.Values{})))
	require.Empty(t, items(w.M2Key, url.Values{"ordering_key": {"SF100"}}))
	st, _ := b.call(t, http.MethodGet, "/v1/messages/"+first, w.M2Key, nil)
	require.Equal(t, http.StatusNotFound, st, "another merchant's message")
	st, _ = b.call(t, http.MethodGet, "/v1/messages/999999999", adminToken, nil)
	require.Equal(t, http.StatusNotFound, st)

	// The message: payload inline, deliveries, every attempt.
	for _, token := range []string{adminToken, w.M1Key} {
		st, m := b.call(t, http.MethodGet, "/v1/messages/"+first, token, nil)
		require.Equal(t, http.StatusOK, st, "%v", m)
		require.Equal(t, map[string]any{"tracking_no": "SF100", "status": "picked_up"}, m["payload"])
		require.NotEmpty(t, m["payload_sha256"])
		dl := m["deliveries"].([]any)
		require.Len(t, dl, 1)
		del := dl[0].(map[string]any)
		require.Equal(t, "delivered", del["status"])
		require.Len(t, del["attempt_history"], 1)
	}
	st, m := b.call(t, http.MethodGet, "/v1/messages/"+other, adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "dead", m["deliveries"].([]any)[0].(map[string]any)["status"])

	// Bad input: 400 with the error shape.
	st, out := search(adminToken, url.Values{"limit": {"1"}})
	require.Equal(t, http.StatusOK, st)
	cur := out["next_cursor"].(string)
	st, mout := search(w.M1Key, url.Values{"limit": {"1"}})
	require.Equal(t, http.StatusOK, st)
	merchantCur := mout["next_cursor"].(string)
	now := time.Now()
	for name, q := range map[string]url.Values{
		"unknown parameter":    {"tracking_no": {"SF100"}},
		"inverted range":       {"ordering_key": {"SF100"}, "since": {now.Format(time.RFC3339)}, "until": {now.Add(-time.Hour).Format(time.RFC3339)}},
		"unparseable since":    {"since": {"yesterday"}},
		"unparseable until":    {"until": {"2024-13-01"}},
		"unkeyed over a day":   {"since": {now.Add(-25 * time.Hour).Format(time.RFC3339)}},
		"bad status":           {"status": {"lost"}},
		"bad endpoint id":      {"endpoint_id": {"x"}},
		"bad limit":            {"limit": {"0"}},
		"garbage cursor":       {"cursor": {"!!"}},
		"cursor of a query":    {"limit": {"1"}, "cursor": {cur}, "status": {"dead"}},
		"cursor of a window":   {"limit": {"1"}, "cursor": {cur}, "since": {now.Add(-time.Hour).Format(time.RFC3339)}},
		"cursor of a merchant": {"limit": {"1"}, "cursor": {merchantCur}},
	} {
		st, out := search(adminToken, q)
		require.Equal(t, http.StatusBadRequest, st, name)
		require.Equal(t, "invalid", errCode(out), name)
	}
}
