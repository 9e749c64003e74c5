package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// A token scoped to merchants sees and acts on the dead letters of their
// endpoints only; one scoped to carriers on those of their messages only.
// Ids and filters outside the scope select nothing; the audit log keeps the
// selection as applied; the admin token still sees every one.
func TestDeadLetterScope(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	c2 := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "other-carrier"})
	c2ID, c2Key := c2["id"].(string), c2["api_key"].(string)
	// A and B from the world's carrier, C from the other; each to both
	// merchants' endpoints: six dead letters.
	for _, s := range []struct{ key, tracking string }{{w.CarrierKey, "A"}, {w.CarrierKey, "B"}, {c2Key, "C"}} {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", s.key, []byte(`{"tracking_no":"`+s.tracking+`"}`))
		require.Equal(t, http.StatusAccepted, st, "%v", out)
		dbtest.Finish(t, b.DB, s.tracking, db.AckDead)
	}
	id := func(s string) int64 {
		var v int64
		_, err := fmt.Sscan(s, &v)
		require.NoError(t, err)
		return v
	}
	// list returns the dead letters token sees with query, by merchant.
	list := func(token, query string) map[string][]map[string]any {
		t.Helper()
		st, out := b.call(t, http.MethodGet, "/v1/dead-letters?limit=100&"+query, token, nil)
		require.Equal(t, http.StatusOK, st, "%v", out)
		by := map[string][]map[string]any{}
		for _, it := range out["items"].([]any) {
			d := it.(map[string]any)
			by[d["merchant_id"].(string)] = append(by[d["merchant_id"].(string)], d)
		}
		return by
	}
	count := func(by map[string][]map[string]any) (n int) {
		for _, v := range by {
			n += len(v)
		}
		return n
	}
	all := list(adminToken, "")
	require.Len(t, all[w.M1], 3)
	require.Len(t, all[w.M2], 3)

	_, m1Tok := b.token(t, adminToken, map[string]any{"name": "m1-ops", "role": "operator", "service": true,
		"scope": map[string]any{"merchants": []int64{id(w.M1)}}})
	_, c2Tok := b.token(t, adminToken, map[string]any{"name": "c2-ops", "role": "operator", "service": true,
		"scope": map[string]any{"carriers": []int64{id(c2ID)}}})
	_, bothTok := b.token(t, adminToken, map[string]any{"name": "m2-c2", "role": "support", "service": true,
		"scope": map[string]any{"merchants": []int64{id(w.M2)}, "carriers": []int64{id(c2ID)}}})
	_, twoTok := b.token(t, adminToken, map[string]any{"name": "m1-m2", "role": "support", "service": true,
		"scope": map[string]any{"merchants": []int64{id(w.M1), id(w.M2)}}})

	// The list.
	mine := list(m1Tok, "")
	require.Equal(t, 3, count(mine))
	require.Len(t, mine[w.M1], 3, "only the scoped merchant's")
	require.Empty(t, list(m1Tok, "merchant_id="+w.M2), "a merchant out of scope selects nothing")
	require.Empty(t, list(m1Tok, "endpoint_id="+w.E2), "another merchant's endpoint selects nothing")
	require.Len(t, list(m1Tok, "merchant_id="+w.M1)[w.M1], 3)
	byC2 := list(c2Tok, "")
	require.Equal(t, 2, count(byC2), "only the scoped carrier's messages")
	for _, v := range byC2 {
		require.Equal(t, c2ID, v[0]["carrier_id"])
	}
	require.Empty(t, list(c2Tok, "carrier_id="+w.CarrierID), "a carrier out of scope selects nothing")
	both := list(bothTok, "")
	require.Equal(t, 1, count(both), "both lists limit")
	require.Equal(t, c2ID, both[w.M2][0]["carrier_id"])
	require.Equal(t, 6, count(list(twoTok, "")), "a scope of several merchants lists them all")
	require.Equal(t, 3, count(list(twoTok, "merchant_id="+w.M2)))

	// A single dead delivery out of scope is not found.
	theirs := all[w.M2][0]["id"].(string)
	st, _ := b.call(t, http.MethodGet, "/v1/deliveries/"+theirs, m1Tok, nil)
	require.Equal(t, http.StatusNotFound, st)
	st, _ = b.call(t, http.MethodPost, "/v1/deliveries/"+theirs+"/retry", m1Tok, nil)
	require.Equal(t, http.StatusNotFound, st)
	var c1Dead, c2Dead string
	for _, d := range all[w.M1] {
		if d["carrier_id"] == c2ID {
			c2Dead = d["id"].(string)
		} else {
			c1Dead = d["id"].(string)
		}
	}
	st, _ = b.call(t, http.MethodGet, "/v1/deliveries/"+c1Dead, c2Tok, nil)
	require.Equal(t, http.StatusNotFound, st, "another carrier's dead letter")
	st, _ = b.call(t, http.MethodPost, "/v1/deliveries/"+c1Dead+"/retry", c2Tok, nil)
	require.Equal(t, http.StatusNotFound, st)
	st, out := b.call(t, http.MethodGet, "/v1/deliveries/"+c2Dead, c2Tok, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, "dead", out["status"])

	// By ids: those out of scope are not acted on, nor counted.
	ids := []string{theirs, all[w.M2][1]["id"].(string), c1Dead}
	st, res := b.call(t, http.MethodPost, "/v1/dead-letters/retry", m1Tok, map[string]any{"ids": ids})
	require.Equal(t, http.StatusOK, st, "%v", res)
	require.Equal(t, float64(1), res["count"])
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/discard", c2Tok, map[string]any{"ids": ids})
	require.Equal(t, http.StatusOK, st, "%v", res)
	require.Equal(t, float64(0), res["count"], "none of them is the carrier's")
	require.Len(t, list(adminToken, "")[w.M2], 3, "the other merchant's are untouched")

	// By filter: the scope's only; a filter out of scope selects nothing.
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/discard", m1Tok, map[string]any{"filter": map[string]any{"merchant_id": w.M2}})
	require.Equal(t, http.StatusOK, st, "%v", res)
	require.Equal(t, float64(0), res["count"])
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/retry", m1Tok, map[string]any{"filter": map[string]any{"endpoint_id": w.E2}})
	require.Equal(t, http.StatusOK, st, "%v", res)
	require.Equal(t, float64(0), res["count"])
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/discard", m1Tok, map[string]any{"filter": map[string]any{}})
	require.Equal(t, http.StatusOK, st, "%v", res)
	require.Equal(t, float64(2), res["count"], "the scoped merchant's two left")
	left := list(adminToken, "")
	require.Empty(t, left[w.M1])
	require.Len(t, left[w.M2], 3, "the other merchant's are untouched")
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/retry", c2Tok, map[string]any{"filter": map[string]any{}})
	require.Equal(t, http.StatusOK, st, "%v", res)
	require.Equal(t, float64(1), res["count"], "the carrier's one left")
	require.Len(t, list(adminToken, "")[w.M2], 2)

	// The audit log keeps the selection as applied.
	_, entries := b.exportLines(t, url.Values{"action": {"dead_letters."}}, adminToken)
	require.Len(t, entries, 6)
	require.JSONEq(t, fmt.Sprintf(`{"count":1,"ids":[%s,%s,%s],"filter":{"EndpointID":0,"CarrierID":0,"MerchantID":0,"Since":"0001-01-01T00:00:00Z","MerchantIDs":[%s],"CarrierIDs":null}}`,
		ids[0], ids[1], ids[2], w.M1), string(entries[0].After))
	require.JSONEq(t, fmt.Sprintf(`{"count":0,"filter":{"EndpointID":0,"CarrierID":0,"MerchantID":%s,"Since":"0001-01-01T00:00:00Z","MerchantIDs":[%s],"CarrierIDs":null}}`,
		w.M2, w.M1), string(entries[2].After))

	// Unscoped: every one, as before.
	st, res = b.call(t, http.MethodPost, "/v1/dead-letters/discard", adminToken, map[string]any{"filter": map[string]any{}})
	require.Equal(t, http.StatusOK, st, "%v", res)
	require.Equal(t, float64(2), res["count"])
}
