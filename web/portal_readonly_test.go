package web_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

var (
	formTagRe  = regexp.MustCompile(`(?is)<form\b[^>]*>`)
	postAttrRe = regexp.MustCompile(`(?i)\bmethod="post"`)
	actionRe   = regexp.MustCompile(`(?i)\baction="([^"]*)"`)
)

// postActions returns the action of every <form method="post"> of page.
func postActions(page string) []string {
	var out []string
	for _, tag := range formTagRe.FindAllString(page, -1) {
		if !postAttrRe.MatchString(tag) {
			continue
		}
		a := ""
		if m := actionRe.FindStringSubmatch(tag); m != nil {
			a = m[1]
		}
		out = append(out, a)
	}
	return out
}

// TestPortalReadOnlyPages opens every page of the portal in a read-only and
// in a read-write session of the same merchant. The read-only session's
// pages hold no form that posts (logout aside: looking out is allowed) and
// no link to a page that exists to post one, and say the access is
// read-only; the read-write session's pages that act still have their forms,
// so the check is not empty. The server refuses those posts anyway
// (TestPortalReadOnly); the pages must not offer them.
func TestPortalReadOnlyPages(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ctx := context.Background()
	m, _ := dbtest.Merchant(t, f.store, nil)
	// A refused connection and an hour until the next attempt: a delivery
	// that can be retried now, so its page offers the retry.
	ep, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m.ID, URL: "http://127.0.0.1:9/mine",
		RetrySchedule: []time.Duration{time.Hour}})
	msg := dbtest.Message(t, f.store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "RO-1"})
	testenv.Eventually(t, 60*time.Second, "the delivery's first attempt", func() bool {
		v, err := f.store.DeliveryRead(ctx, msg.DeliveryIDs[0])
		require.NoError(t, err)
		return v.Pending != nil && v.Pending.Attempt >= 1 && v.Pending.VisibleAt.After(time.Now().Add(time.Minute))
	})
	// No replay runner: the replay stays running, so its page offers
	// cancelling it.
	now := time.Now().UTC()
	status, out := apiCallBase(t, f.URL, "POST", "/v1/endpoints/"+itoa(ep.ID)+"/replay", testAdminToken,
		map[string]any{"since": now.Add(-time.Hour).Format(time.RFC3339), "until": now.Add(time.Hour).Format(time.RFC3339), "status": "all"})
	require.Equal(t, http.StatusAccepted, status, "%v", out)

	e, d, r := "/ui/m/endpoints/"+itoa(ep.ID), "/ui/m/deliveries/"+itoa(msg.DeliveryIDs[0]), "/ui/m/replays/"+out["id"].(string)
	// Each page of the portal, by route, with whether a read-write session
	// sees a form there that posts.
	pages := []struct {
		route, path string
		acts        bool
	}{
		{"/ui/m/", "/ui/m/", false},
		{"/ui/m/endpoints/new", "/ui/m/endpoints/new", true},
		{"/ui/m/endpoints/:id", e, true},
		{"/ui/m/endpoints/:id/edit", e + "/edit", true},
		{"/ui/m/endpoints/:id/delete", e + "/delete", true},
		{"/ui/m/endpoints/:id/deliveries", e + "/deliveries", false},
		{"/ui/m/endpoints/:id/replay", e + "/replay", true},
		{"/ui/m/deliveries/:id", d, true},
		{"/ui/m/messages", "/ui/m/messages?q=RO-1", false},
		{"/ui/m/replays/:id", r, true},
		{"/ui/m/events", "/ui/m/events", false},
	}
	// Every page of the portal is in the list: a new one must be added.
	var routes []string
	for _, rt := range f.Routes {
		if rt.Method == http.MethodGet && strings.HasPrefix(rt.Path, "/ui/m/") {
			routes = append(routes, rt.Path)
		}
	}
	var listed []string
	for _, p := range pages {
		listed = append(listed, p.route)
	}
	slices.Sort(routes)
	slices.Sort(listed)
	require.Equal(t, routes, listed, "the portal's pages")

	ro := newUIClient(t, f.URL)
	ro.openPortal(portalLink(t, f.URL, m.ID, true))
	rw := newUIClient(t, f.URL)
	rw.openPortal(portalLink(t, f.URL, m.ID, false))
	for _, p := range pages {
		resp, page := ro.do("GET", p.path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p.path)
		require.Equal(t, []string{"/ui/logout"}, postActions(page), "%s: a read-only page posts nothing but logout", p.path)
		require.Contains(t, page, `id="read-only"`, p.path)
		for _, href := range []string{`/endpoints/new"`, `/edit"`, `/delete"`, `/replay"`} {
			require.NotContains(t, page, href, "%s: no way to a form it cannot post", p.path)
		}

		resp, page = rw.do("GET", p.path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p.path)
		require.NotContains(t, page, `id="read-only"`, p.path)
		acts := postActions(page)
		require.Contains(t, acts, "/ui/logout", p.path)
		require.Equal(t, p.acts, len(acts) > 1, "%s: a read-write page's forms: %v", p.path, acts)
	}
}
