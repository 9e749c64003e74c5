package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

const uiTime = "2006-01-02T15:04" // the forms' datetime-local values, UTC

var replayIDRe = regexp.MustCompile(`/replays/(\d+)$`)

// countingSink is a merchant endpoint that answers 200 and counts requests.
func countingSink(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// The operator replays an endpoint's delivered callbacks from the
// dashboard: the confirmation counts them, the start leads to the replay's
// page, which refreshes itself until the replay has finished.
func TestWebReplayConfirmStartFinish(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{Replays: true})
	ctx := context.Background()
	sink, got := countingSink(t)
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{URL: sink.URL})
	since := time.Now().UTC().Add(-time.Minute)
	for _, k := range []string{"A", "B", "A", "C", "B"} {
		dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: k})
	}
	testenv.Eventually(t, 30*time.Second, "the first deliveries", func() bool {
		p, err := f.store.DeliveryListPending(ctx, ep.ID, 0, 1)
		require.NoError(t, err)
		return got.Load() == 5 && len(p) == 0
	})

	c := newUIClient(t, f.URL)
	csrf := c.login(testAdminToken)
	epID := itoa(ep.ID)
	resp, page := c.do("GET", "/ui/endpoints", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `href="/ui/endpoints/`+epID+`/replay"`)
	resp, page = c.do("GET", "/ui/endpoints/"+epID+"/replay", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<label for="since">Since (UTC)</label>`)
	require.Contains(t, page, `type="datetime-local" id="until"`)

	form := url.Values{"csrf": {csrf}, "since": {since.Format(uiTime)},
		"until": {time.Now().UTC().Add(time.Hour).Format(uiTime)}, "status": {"delivered"}}
	// The form's errors come back next to their fields.
	bad := url.Values{"csrf": {csrf}, "since": {"yesterday"}, "until": form["until"], "status": {"delivered"}}
	resp, page = c.do("POST", "/ui/endpoints/"+epID+"/replay/confirm", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, page)
	require.Regexp(t, `id="since-error">since: want a date and time`, page)
	require.Contains(t, page, `value="yesterday"`, "the form keeps what was typed")
	bad.Set("since", time.Now().UTC().Add(-40*24*time.Hour).Format(uiTime))
	resp, page = c.do("POST", "/ui/endpoints/"+epID+"/replay/confirm", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, page)
	require.Contains(t, page, `id="until-error">the window is longer than`)

	resp, page = c.do("POST", "/ui/endpoints/"+epID+"/replay/confirm", form)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "This will send <strong>5</strong> deliveries")
	keyed := url.Values{}
	for k, v := range form {
		keyed[k] = v
	}
	keyed.Set("ordering_key", "A")
	_, keyPage := c.do("POST", "/ui/endpoints/"+epID+"/replay/confirm", keyed)
	require.Contains(t, keyPage, "This will send <strong>2</strong> deliveries", "one key's")
	require.Equal(t, int64(5), got.Load(), "the confirmation sends nothing")

	start := url.Values{"csrf": {csrf}}
	for _, name := range []string{"since", "until", "status", "ordering_key"} {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
		require.NotNil(t, m, name)
		start.Set(name, m[1])
	}
	resp, _ = c.do("POST", "/ui/endpoints/"+epID+"/replay", start)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.Regexp(t, replayIDRe, loc)

	testenv.Eventually(t, 30*time.Second, "the replay to finish", func() bool {
		_, page = c.do("GET", loc, nil)
		if strings.Contains(page, `data-state="running"`) {
			require.Contains(t, page, `data-refresh=`, "a running replay's page refreshes itself")
			require.Contains(t, page, `id="replay-cancel"`)
		}
		return strings.Contains(page, `data-state="finished"`)
	})
	require.Contains(t, page, `id="replay-total">5<`)
	require.Contains(t, page, `id="replay-done">5<`)
	require.Contains(t, page, `id="replay-failed">0<`)
	require.NotContains(t, page, `data-refresh=`)
	require.NotContains(t, page, `id="replay-cancel"`)
	testenv.Eventually(t, 30*time.Second, "the re-deliveries", func() bool { return got.Load() == 10 })

	// A finished replay cannot be cancelled.
	resp, _ = c.do("POST", loc+"/cancel", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)

	// The endpoint's replay form lists its recent replays, linked.
	resp, page = c.do("GET", "/ui/endpoints/"+epID+"/replay", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="recent-replays"`)
	require.Contains(t, page, `href="`+loc+`"`)
	other, _ := dbtest.Endpoint(t, f.store, nil)
	_, page = c.do("GET", "/ui/endpoints/"+itoa(other.ID)+"/replay", nil)
	require.NotContains(t, page, `id="recent-replays"`, "another endpoint's form lists none")
}

// A merchant replays its own endpoint and cancels the replay; another
// merchant sees neither the endpoint's form nor the replay.
func TestWebMerchantReplayCancelAndScope(t *testing.T) {
	t.Parallel()
	// No replay runner: the replay stays running until cancelled.
	f := startWebFixture(t, fixtureOpts{})
	m1, key1 := dbtest.Merchant(t, f.store, nil)
	_, key2 := dbtest.Merchant(t, f.store, nil)
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m1.ID, Disabled: true})
	epID := itoa(ep.ID)

	mc := newUIClient(t, f.URL)
	csrf := mc.login(key1)
	resp, page := mc.do("GET", "/ui/m/endpoints/"+epID, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `href="/ui/m/endpoints/`+epID+`/replay"`)
	form := url.Values{"csrf": {csrf}, "since": {time.Now().UTC().Add(-time.Hour).Format(uiTime)},
		"until": {time.Now().UTC().Add(time.Hour).Format(uiTime)}, "status": {"all"}}
	resp, page = mc.do("POST", "/ui/m/endpoints/"+epID+"/replay/confirm", form)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "This will send <strong>0</strong> deliveries")
	require.Contains(t, page, `id="replay-nothing"`)
	resp, _ = mc.do("POST", "/ui/m/endpoints/"+epID+"/replay", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, "/ui/m/replays/"), loc)
	rid := replayIDRe.FindStringSubmatch(loc)[1]
	resp, page = mc.do("GET", loc, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `data-state="running"`)
	require.Contains(t, page, `data-refresh=`)

	other := newUIClient(t, f.URL)
	otherCSRF := other.login(key2)
	for _, p := range []string{"/ui/m/replays/" + rid, "/ui/m/endpoints/" + epID + "/replay"} {
		resp, _ = other.do("GET", p, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, p)
	}
	form.Set("csrf", otherCSRF)
	for _, p := range []string{"/ui/m/replays/" + rid + "/cancel", "/ui/m/endpoints/" + epID + "/replay/confirm", "/ui/m/endpoints/" + epID + "/replay"} {
		resp, _ = other.do("POST", p, form)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, p)
	}
	resp, _ = mc.do("GET", "/ui/replays/"+rid, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the operator's page is the operator's")

	resp, _ = mc.do("POST", loc+"/cancel", url.Values{})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	resp, _ = mc.do("POST", loc+"/cancel", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, page = mc.do("GET", resp.Header.Get("Location"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `data-state="cancelled"`)
	require.Contains(t, page, "Replay cancelled.")
	require.NotContains(t, page, `data-refresh=`)

	// The endpoint's replay form lists it, linked to the merchant's page.
	resp, page = mc.do("GET", "/ui/m/endpoints/"+epID+"/replay", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="recent-replays"`)
	require.Contains(t, page, `href="/ui/m/replays/`+rid+`"`)

	// The operator sees it too, on the replay's page and in the endpoint's
	// form, linked to the operator's page.
	oc := newUIClient(t, f.URL)
	oc.login(testAdminToken)
	resp, page = oc.do("GET", "/ui/replays/"+rid, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `data-state="cancelled"`)
	_, page = oc.do("GET", "/ui/endpoints/"+epID+"/replay", nil)
	require.Contains(t, page, `href="/ui/replays/`+rid+`"`)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
