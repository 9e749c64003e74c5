package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

// The operations (retry a delivery, retry or discard dead letters, rotate a
// secret, enable/disable, send a test event) have one implementation, in
// ops, behind both the API and the dashboard. Each test below drives both
// surfaces over the same state and requires the same outcome: success on
// both (2xx from the API, a redirect or page from the dashboard) with the
// same effect, or the same error status.

// apiCallBase sends an API request to base+path with token and a JSON body
// (none when nil) and returns the status and the decoded JSON answer (nil
// when none).
func apiCallBase(t *testing.T, base, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	resp := apiDo(t, http.DefaultClient, method, base+path, token, body, &out)
	return resp.StatusCode, out
}

// apiDo sends a request with token as its bearer and body (when not nil) as
// JSON, and decodes the answer into out (when not nil): a success's body must
// decode; an error's is decoded when it can be.
func apiDo(t *testing.T, client *http.Client, method, u, token string, body, out any) *http.Response {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, r)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	checked := *client
	checked.Transport = apitest.Wrap(t, client.Transport)
	resp, err := checked.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		if resp.StatusCode < 300 {
			if len(raw) > 0 {
				require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
			}
		} else {
			_ = json.Unmarshal(raw, out)
		}
	}
	return resp
}

// outcome reduces a status to what both surfaces must agree on: "ok" for a
// success (an API 2xx, a dashboard redirect or page), else the status.
func outcome(status int) string {
	if status/100 == 2 || status == http.StatusSeeOther {
		return "ok"
	}
	return strconv.Itoa(status)
}

// dashPost posts a dashboard form with the session's CSRF token.
func dashPost(c *uiClient, csrf, path string, form url.Values) int {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrf)
	resp, _ := c.do("POST", path, form)
	return resp.StatusCode
}

func TestParityRetryDelivery(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, f.store, nil)
	// Disabled: its deliveries stay pending, nothing is attempted.
	_, err := f.store.EndpointDisable(ctx, ep.ID, "test")
	require.NoError(t, err)
	pending := func() int64 {
		return dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}}).DeliveryIDs[0]
	}
	ui := newUIClient(t, f.URL)
	csrf := ui.login(testAdminToken)
	for _, c := range []struct {
		name   string
		ids    func() (int64, int64)
		expect string
	}{
		{"pending", func() (int64, int64) { return pending(), pending() }, "ok"},
		{"unknown", func() (int64, int64) { return 999999998, 999999999 }, "404"},
	} {
		apiID, uiID := c.ids()
		st, body := apiCallBase(t, f.URL, "POST", "/v1/deliveries/"+strconv.FormatInt(apiID, 10)+"/retry", testAdminToken, nil)
		dst := dashPost(ui, csrf, "/ui/deliveries/"+strconv.FormatInt(uiID, 10)+"/retry", nil)
		require.Equal(t, c.expect, outcome(st), "%s: API %d %v", c.name, st, body)
		require.Equal(t, outcome(st), outcome(dst), "%s: API %d, dashboard %d", c.name, st, dst)
	}
}

func TestParityDeadLetters(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ctx := context.Background()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	t.Cleanup(failing.Close)
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{URL: failing.URL, RetrySchedule: []time.Duration{10 * time.Millisecond}})
	for range 4 {
		dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}})
	}
	var dead []db.DeadLetter
	require.Eventually(t, func() bool {
		dead, _ = f.store.DeadLetterList(ctx, db.DeadLetterFilter{EndpointID: ep.ID}, db.DeadLetterPage{Newest: true}, 10)
		return len(dead) == 4
	}, 30*time.Second, 20*time.Millisecond, "the deliveries did not become dead letters")
	// The endpoint is disabled now, so retried rows stay pending.
	_, err := f.store.EndpointDisable(ctx, ep.ID, "test")
	require.NoError(t, err)
	ui := newUIClient(t, f.URL)
	csrf := ui.login(testAdminToken)

	for i, action := range []string{"retry", "discard"} {
		apiID, uiID := dead[2*i].ID, dead[2*i+1].ID
		// Twice: the first acts on one dead letter, the second finds none.
		for _, want := range []int64{1, 0} {
			st, body := apiCallBase(t, f.URL, "POST", "/v1/dead-letters/"+action, testAdminToken,
				map[string]any{"ids": []string{strconv.FormatInt(apiID, 10)}})
			require.Equal(t, http.StatusOK, st, "API %s: %v", action, body)
			require.EqualValues(t, want, body["count"], "API %s", action)
			resp, _ := ui.do("POST", "/ui/dead-letters/apply", url.Values{"csrf": {csrf}, "action": {action},
				"scope": {"selected"}, "id": {strconv.FormatInt(uiID, 10)}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, "dashboard %s", action)
			loc, err := url.Parse(resp.Header.Get("Location"))
			require.NoError(t, err)
			require.Equal(t, strconv.FormatInt(want, 10), loc.Query().Get("n"), "dashboard %s", action)
		}
	}
	left, err := f.store.DeadLetterList(ctx, db.DeadLetterFilter{EndpointID: ep.ID}, db.DeadLetterPage{Newest: true}, 10)
	require.NoError(t, err)
	require.Empty(t, left, "retried and discarded dead letters are gone from both surfaces' selection")

	// The same invalid request is refused by both.
	st, _ := apiCallBase(t, f.URL, "POST", "/v1/dead-letters/retry", testAdminToken, map[string]any{"ids": []string{}, "filter": map[string]any{}})
	dst := dashPost(ui, csrf, "/ui/dead-letters/apply", url.Values{"action": {"retry"}, "scope": {"selected"}})
	require.Equal(t, "400", outcome(st))
	require.Equal(t, outcome(st), outcome(dst))
}

func TestParityEnableDisable(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, f.store, nil)
	id := strconv.FormatInt(ep.ID, 10)
	ui := newUIClient(t, f.URL)
	csrf := ui.login(testAdminToken)
	status := func() string {
		e, err := f.store.EndpointGet(ctx, ep.ID)
		require.NoError(t, err)
		return e.Status
	}
	for _, step := range []struct{ action, surface string }{
		{"disable", "api"}, {"enable", "ui"}, {"disable", "ui"}, {"enable", "api"},
		{"enable", "ui"}, {"enable", "api"}, // enabling an enabled endpoint: the same on both
	} {
		var st int
		if step.surface == "api" {
			st, _ = apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+id+"/"+step.action, testAdminToken, nil)
		} else {
			st = dashPost(ui, csrf, "/ui/endpoints/"+id+"/"+step.action, nil)
		}
		require.Equal(t, "ok", outcome(st), "%s through %s", step.action, step.surface)
		require.Equal(t, step.action+"d", status(), "%s through %s", step.action, step.surface)
	}
	st, _ := apiCallBase(t, f.URL, "POST", "/v1/endpoints/999999999/disable", testAdminToken, nil)
	dst := dashPost(ui, csrf, "/ui/endpoints/999999999/disable", nil)
	require.Equal(t, "404", outcome(st))
	require.Equal(t, outcome(st), outcome(dst))
}

func TestParityRotateSecret(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ctx := context.Background()
	m, key := dbtest.Merchant(t, f.store, nil)
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID})
	other, _ := dbtest.Endpoint(t, f.store, nil)
	ui := newUIClient(t, f.URL)
	csrf := ui.login(key)
	active := func() int {
		s, err := f.store.EndpointSecretsActive(ctx, ep.ID)
		require.NoError(t, err)
		return len(s)
	}
	require.Equal(t, 1, active())
	st, body := apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+strconv.FormatInt(ep.ID, 10)+"/rotate-secret", key, nil)
	require.Equal(t, "ok", outcome(st), "%v", body)
	require.Equal(t, 2, active(), "a rotation through the API keeps the old secret beside the new one")
	dst := dashPost(ui, csrf, "/ui/m/endpoints/"+strconv.FormatInt(ep.ID, 10)+"/rotate", nil)
	require.Equal(t, "ok", outcome(dst))
	require.Equal(t, 3, active(), "a rotation through the dashboard does the same")
	// Another merchant's endpoint: not found through both.
	st, _ = apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+strconv.FormatInt(other.ID, 10)+"/rotate-secret", key, nil)
	dst = dashPost(ui, csrf, "/ui/m/endpoints/"+strconv.FormatInt(other.ID, 10)+"/rotate", nil)
	require.Equal(t, "404", outcome(st))
	require.Equal(t, outcome(st), outcome(dst))
}

func TestParityTestSend(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	var hits atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(sink.Close)
	m, key := dbtest.Merchant(t, f.store, nil)
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: sink.URL + "/hook"})
	other, _ := dbtest.Endpoint(t, f.store, nil)
	ui := newUIClient(t, f.URL)
	csrf := ui.login(key)

	st, body := apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+strconv.FormatInt(ep.ID, 10)+"/test", key, nil)
	require.Equal(t, "ok", outcome(st), "%v", body)
	require.EqualValues(t, 1, hits.Load(), "the API's test event reached the endpoint")
	resp, page := ui.do("POST", "/ui/m/endpoints/"+strconv.FormatInt(ep.ID, 10)+"/test", url.Values{"csrf": {csrf}})
	require.Equal(t, "ok", outcome(resp.StatusCode), page)
	require.EqualValues(t, 2, hits.Load(), "the dashboard's test event reached the endpoint")

	st, _ = apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+strconv.FormatInt(other.ID, 10)+"/test", key, nil)
	dst := dashPost(ui, csrf, "/ui/m/endpoints/"+strconv.FormatInt(other.ID, 10)+"/test", nil)
	require.Equal(t, "404", outcome(st))
	require.Equal(t, outcome(st), outcome(dst))
}
