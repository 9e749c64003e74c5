package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEndpointHeadersAuthFilterAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	ctx := t.Context()

	ep := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{
		"url":     "http://127.0.0.1:9/h",
		"headers": map[string]any{"x-api-key": "k-123", "X-Tenant": "acme"},
		"auth":    map[string]any{"type": "basic", "username": "hook", "password": "pa55"},
		"filter":  `status == "DELIVERED" && weight > 2`,
	})
	id := ep["id"].(string)
	require.Equal(t, map[string]any{"X-Api-Key": "********", "X-Tenant": "********"}, ep["headers"], "names canonical, values masked")
	require.Equal(t, map[string]any{"type": "basic", "username": "hook"}, ep["auth"], "no password in answers")
	require.Equal(t, `status == "DELIVERED" && weight > 2`, ep["filter"])

	st, got := b.call(t, http.MethodGet, "/v1/endpoints/"+id, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, ep["headers"], got["headers"])
	require.Equal(t, ep["auth"], got["auth"])
	stored, err := b.DB.EndpointGet(ctx, id64(t, id))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Api-Key": "k-123", "X-Tenant": "acme"}, stored.Headers)
	require.Equal(t, "pa55", stored.Auth.Password)

	// PATCH merges headers (null removes), replaces auth, clears the filter.
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{
		"headers": map[string]any{"X-Tenant": nil, "X-Region": "eu"},
		"auth":    map[string]any{"type": "bearer", "token": "tok-abc"},
		"filter":  "",
	})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, map[string]any{"X-Api-Key": "********", "X-Region": "********"}, got["headers"])
	require.Equal(t, map[string]any{"type": "bearer"}, got["auth"])
	require.Equal(t, "", got["filter"])
	stored, err = b.DB.EndpointGet(ctx, id64(t, id))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Api-Key": "k-123", "X-Region": "eu"}, stored.Headers)
	require.Equal(t, "tok-abc", stored.Auth.Token)

	// A PATCH of other fields keeps them; auth null removes the credentials.
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{"description": "x"})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, map[string]any{"type": "bearer"}, got["auth"])
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{"auth": nil})
	require.Equal(t, http.StatusOK, st)
	require.Nil(t, got["auth"])
	require.Len(t, got["headers"], 2)

	// An endpoint without any: empty headers, null auth, "" filter.
	st, got = b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, map[string]any{}, got["headers"])
	require.Nil(t, got["auth"])
	require.Equal(t, "", got["filter"])
}

func TestEndpointReceiverFieldsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	cases := []struct {
		body    map[string]any
		mention string
	}{
		{map[string]any{"headers": map[string]any{"Connection": "close"}}, `"Connection"`},
		{map[string]any{"headers": map[string]any{"transfer-encoding": "chunked"}}, `"transfer-encoding"`},
		{map[string]any{"headers": map[string]any{"Proxy-Authorization": "x"}}, `"Proxy-Authorization"`},
		{map[string]any{"headers": map[string]any{"Host": "evil"}}, `"Host"`},
		{map[string]any{"headers": map[string]any{"Content-Type": "text/plain"}}, `"Content-Type"`},
		{map[string]any{"headers": map[string]any{"webhook-signature": "v1,x"}}, `"webhook-signature"`},
		{map[string]any{"headers": map[string]any{"X-Hookrelay-Attempt": "9"}}, `"X-Hookrelay-Attempt"`},
		{map[string]any{"headers": map[string]any{"Authorization": "Bearer x"}}, `auth`},
		{map[string]any{"headers": map[string]any{"Bad Name": "x"}}, `"Bad Name"`},
		{map[string]any{"headers": map[string]any{"X-A": "line\r\nInjected: 1"}}, `"X-A"`},
		{map[string]any{"headers": map[string]any{"X-A": "a\rb"}}, `"X-A"`},
		{map[string]any{"headers": map[string]any{"X-A": "a\nb"}}, `"X-A"`},
		{map[string]any{"headers": map[string]any{"X-A": "a\x7fb"}}, `"X-A"`},
		{map[string]any{"headers": map[string]any{"X-A": "a\x01b"}}, `"X-A"`},
		{map[string]any{"headers": map[string]any{"X-A": "a\x1fb"}}, `"X-A"`},
		{map[string]any{"headers": map[string]any{"X-A\r\nX-B": "1"}}, `"X-A\r\nX-B"`},
		{map[string]any{"auth": map[string]any{"type": "bearer", "token": "t\r\nX-B: 1"}}, `auth.token`},
		{map[string]any{"auth": map[string]any{"type": "basic", "username": "u", "password": "p\x7f"}}, `auth.password`},
		{map[string]any{"headers": map[string]any{"X-A": "********"}}, `mask`},
		{map[string]any{"headers": map[string]any{"X-A": "1", "x-a": "2"}}, `same header`},
		{map[string]any{"auth": map[string]any{"type": "digest"}}, `auth.type`},
		{map[string]any{"auth": map[string]any{"type": "basic", "password": "p"}}, `auth.username`},
		{map[string]any{"auth": map[string]any{"type": "basic", "username": "a:b"}}, `colon`},
		{map[string]any{"auth": map[string]any{"type": "bearer"}}, `auth.token`},
		{map[string]any{"auth": map[string]any{"type": "bearer", "token": "t", "password": "p"}}, `basic`},
		{map[string]any{"filter": `status == `}, `at character 11`},
		{map[string]any{"filter": `status = "x"`}, `at character 8`},
		{map[string]any{"filter": `(a == 1`}, `expected )`},
	}
	for _, c := range cases {
		body := map[string]any{"url": "http://127.0.0.1:9/bad"}
		for k, v := range c.body {
			body[k] = v
		}
		st, out := b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, body)
		require.Equal(t, http.StatusBadRequest, st, "%v → %v", c.body, out)
		require.Equal(t, "invalid", errCode(out))
		msg := out["error"].(map[string]any)["message"].(string)
		require.Contains(t, msg, c.mention, "%v", c.body)
		// The same through PATCH.
		delete(body, "url")
		st, out = b.call(t, http.MethodPatch, "/v1/endpoints/"+w.E1, w.M1Key, body)
		require.Equal(t, http.StatusBadRequest, st, "PATCH %v → %v", c.body, out)
	}
	// Nothing was changed by the refused PATCHes.
	st, got := b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, map[string]any{}, got["headers"])
	require.Nil(t, got["auth"])
}

// TestCallbackContentFilter: an endpoint's filter decides at ingest which
// callbacks it gets, by their JSON; one without a filter gets them all.
func TestCallbackContentFilter(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	f := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{
		"url":    "http://127.0.0.1:9/filtered",
		"filter": `status == "DELIVERED" && (parcel.weight > 2 || tags.vip == true) && !exists(test)`,
	})
	send := func(body string) int64 {
		st, out := b.call(t, http.MethodPost, "/v1/callbacks", w.CarrierKey, []byte(body))
		require.Equal(t, http.StatusAccepted, st, "%v", out)
		return int64(out["deliveries"].(float64))
	}
	// E1, E2 (no filter) and the filtered endpoint.
	n := send(`{"tracking_no":"a","status":"DELIVERED","parcel":{"weight":2.5}}`)
	require.Equal(t, int64(3), n)
	n = send(`{"tracking_no":"a","status":"DELIVERED","parcel":{"weight":1},"tags":{"vip":true}}`)
	require.Equal(t, int64(3), n)
	for _, miss := range []string{
		`{"tracking_no":"a","status":"IN_TRANSIT","parcel":{"weight":5}}`,
		`{"tracking_no":"a","status":"DELIVERED","parcel":{"weight":1}}`,
		`{"tracking_no":"a","status":"DELIVERED","parcel":{"weight":"9"}}`,
		`{"tracking_no":"a","status":"DELIVERED","parcel":{"weight":5},"test":null}`,
		`{"tracking_no":"a","parcel":{"weight":5}}`,
	} {
		require.Equal(t, int64(2), send(miss), miss)
	}
	// A PATCH changes what later callbacks match.
	st, _ := b.call(t, http.MethodPatch, "/v1/endpoints/"+f["id"].(string), w.M1Key, map[string]any{"filter": `status in ["IN_TRANSIT"]`})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, int64(3), send(`{"tracking_no":"a","status":"IN_TRANSIT"}`))
	require.Equal(t, int64(2), send(`{"tracking_no":"a","status":"DELIVERED","parcel":{"weight":5}}`))
}
