package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every query parameter of the API's read routes, given a value PostgreSQL
// cannot take as text (invalid UTF-8, NUL, an overlong UTF-8 encoding) or
// one longer than anything stored, is a 400 naming the parameter, never a
// 500 from a failed statement: text filters go through the text check of
// everything stored (ops.CheckSearchText), the others are parsed (ids,
// times, limits, cursors, states). The replay body's text fields are
// checked alike; a JSON body cannot carry invalid UTF-8 (the decoder
// replaces it), only NUL. A path id that does not parse is a 404.
func TestQueryParamsRefuseBadTextWith400(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	bad := map[string]string{
		"invalid UTF-8":  "%ff%fe",
		"NUL":            "a%00b",
		"overlong UTF-8": "%c0%af",
		"too long":       strings.Repeat("k", 1025),
	}
	routes := []struct {
		path, token string
		params      []string
	}{
		{"/v1/messages", adminToken, []string{"ordering_key", "event_type", "status", "carrier_id", "endpoint_id", "since", "until", "limit", "cursor"}},
		{"/v1/messages", w.M1Key, []string{"ordering_key", "event_type", "status", "endpoint_id", "cursor"}},
		{"/v1/dead-letters", adminToken, []string{"endpoint_id", "carrier_id", "merchant_id", "since", "limit", "cursor"}},
		{"/v1/endpoints/" + w.E1 + "/deliveries", w.M1Key, []string{"status", "limit", "cursor"}},
		{"/v1/endpoints", adminToken, []string{"merchant_id", "limit", "cursor"}},
		{"/v1/endpoints", w.M1Key, []string{"limit", "cursor"}},
		{"/v1/carriers", adminToken, []string{"limit", "cursor"}},
		{"/v1/merchants", adminToken, []string{"limit", "cursor"}},
		{"/v1/sessions", adminToken, []string{"limit", "cursor"}},
	}
	for _, r := range routes {
		for _, p := range r.params {
			for what, v := range bad {
				st, out := b.call(t, http.MethodGet, r.path+"?"+p+"="+v, r.token, nil)
				require.Equal(t, http.StatusBadRequest, st, "%s ?%s= %s: %v", r.path, p, what, out)
				require.Equal(t, "invalid", errCode(out), "%s ?%s= %s", r.path, p, what)
				msg, _ := out["error"].(map[string]any)["message"].(string)
				require.Contains(t, msg, p, "%s ?%s= %s: the answer names the parameter", r.path, p, what)
			}
		}
	}
	// Path ids are not text: one that does not parse is no such object.
	for _, path := range []string{"/v1/replays/", "/v1/messages/", "/v1/deliveries/", "/v1/endpoints/"} {
		for what, v := range bad {
			st, out := b.call(t, http.MethodGet, path+v, w.M1Key, nil)
			require.Equal(t, http.StatusNotFound, st, "%s%s (%s): %v", path, v, what, out)
		}
	}
	// The search's text filters together with others: still 400.
	st, out := b.call(t, http.MethodGet, "/v1/messages?ordering_key=%ff%fe&status=dead&endpoint_id="+w.E1, adminToken, nil)
	require.Equal(t, http.StatusBadRequest, st, "%v", out)

	for _, body := range []string{
		`{"since":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z","status":"all","ordering_key":"a\u0000b"}`,
		`{"since":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z","status":"all","ordering_key":"` + strings.Repeat("k", 1025) + `"}`,
		`{"since":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z","status":"a\u0000b"}`,
	} {
		st, out := b.call(t, http.MethodPost, "/v1/endpoints/"+w.E1+"/replay", w.M1Key, []byte(body))
		require.Equal(t, http.StatusBadRequest, st, "%s: %v", body, out)
	}
}
