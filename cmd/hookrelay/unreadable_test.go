package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/keyring"
)

// byPath counts the requests the sink got, by path.
func (s *changeSink) byPath() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, r := range s.reqs {
		out[r.path]++
	}
	return out
}

// bodiesAt returns the bodies of the requests the sink got at path.
func (s *changeSink) bodiesAt(path string) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for _, r := range s.reqs {
		if r.path == path {
			out = append(out, r.body)
		}
	}
	return out
}

// pageWith returns the body of a GET of u with the session cookie ck.
func pageWith(t *testing.T, c *http.Client, u string, ck *http.Cookie) string {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.AddCookie(ck)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// TestUnreadableSecretNeverDelaysOtherEndpoints: one merchant's endpoint
// whose signing secret was sealed under a key the service does not hold
// (as a process with another key would have written it) among ten other
// merchants' endpoints that get the same callbacks: the ten get every
// delivery promptly; the one is parked with its reason visible (metric,
// operational webhook, dashboard, the API) and can still be read (200,
// without its secret), edited and deleted.
func TestUnreadableSecretNeverDelaysOtherEndpoints(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	sink := newChangeSink(t)
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/ops-endpoints", restAdmin, map[string]any{"url": sink.URL + "/ops"}, nil))
	var carrier struct {
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/carriers", restAdmin,
		map[string]any{"name": "acme", "ordering_key_field": "tracking_no", "event_type_field": "status"}, &carrier))
	var ids, keys []string
	for i := range 11 {
		var m struct {
			APIKey string `json:"api_key"`
		}
		require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/merchants", restAdmin, map[string]any{"name": fmt.Sprint("shop-", i)}, &m))
		var ep struct {
			ID string `json:"id"`
		}
		require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/endpoints", m.APIKey, map[string]any{"url": fmt.Sprintf("%s/ep%d", sink.URL, i)}, &ep))
		ids, keys = append(ids, ep.ID), append(keys, m.APIKey)
	}
	badID, badKey := ids[10], keys[10]
	other, err := keyring.Parse(keyring.Generate(), "")
	require.NoError(t, err)
	conn := rawConn(t, url)
	_, err = conn.Exec(t.Context(), `UPDATE endpoint_secrets SET secret = $1 WHERE endpoint_id = $2`,
		other.Seal("endpoint_secret", []byte("whsec_c2VhbGVkIHVuZGVyIGFub3RoZXIga2V5")), badID)
	require.NoError(t, err)

	for i := range 10 {
		st, _, out := ingestCall(t, s, "POST", "/v1/callbacks", carrier.APIKey, map[string]any{"tracking_no": fmt.Sprint("TN-", i), "status": "delivered"})
		require.Equal(t, http.StatusAccepted, st, "%v", out)
	}
	testenv.EventuallyErr(t, 30*time.Second, func() error {
		got := sink.byPath()
		for i := range 10 {
			if n := got[fmt.Sprintf("/ep%d", i)]; n < 10 {
				return fmt.Errorf("endpoint %d of the healthy ten got %d of its 10 deliveries (all: %v)", i, n, got)
			}
		}
		return nil
	})
	require.Zero(t, sink.byPath()["/ep10"], "nothing sent without the endpoint's secret")

	// Visible: the metric, the operational webhook, the API, the dashboard.
	testenv.Eventually(t, 10*time.Second, "hookrelay_endpoints_unreadable 1", func() bool {
		resp, err := apitest.Client(t).Get(s.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "\nhookrelay_endpoints_unreadable 1\n") && strings.Contains(string(b), `hookrelay_deliveries_total{outcome="unreadable"}`)
	})
	testenv.Eventually(t, 15*time.Second, "the endpoint.secret_unreadable event", func() bool {
		for _, b := range sink.bodiesAt("/ops") {
			var ev struct {
				Type string            `json:"type"`
				Data map[string]string `json:"data"`
			}
			if json.Unmarshal(b, &ev) == nil && ev.Type == "endpoint.secret_unreadable" && ev.Data["endpoint_id"] == badID {
				return strings.Contains(ev.Data["reason"], "key id "+other.CurrentID())
			}
		}
		return false
	})
	var got struct {
		ID         string `json:"id"`
		Secret     *string
		Unreadable struct {
			Fields []string `json:"fields"`
			Reason string   `json:"reason"`
		} `json:"unreadable"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, "GET", s.URL+"/v1/endpoints/"+badID, badKey, nil, &got))
	require.Equal(t, badID, got.ID)
	require.Nil(t, got.Secret)
	require.Equal(t, []string{"secret"}, got.Unreadable.Fields)
	require.Contains(t, got.Unreadable.Reason, "key id "+other.CurrentID())
	c := noRedirects(t)
	_, ck := dashboardLogin(t, c, s.URL, restAdmin)
	require.NotNil(t, ck)
	require.Contains(t, pageWith(t, c, s.URL+"/ui/endpoints", ck), "secret cannot be opened")
	mc := noRedirects(t)
	_, mck := dashboardLogin(t, mc, s.URL, badKey)
	require.NotNil(t, mck)
	require.Contains(t, pageWith(t, mc, s.URL+"/ui/m/", mck), "secret cannot be opened")
	require.Contains(t, pageWith(t, mc, s.URL+"/ui/m/endpoints/"+badID, mck), "key id "+other.CurrentID())
	require.Equal(t, http.StatusConflict, apiCall(t, "POST", s.URL+"/v1/endpoints/"+badID+"/test", badKey, nil, nil), "no ping without its secret")

	require.Equal(t, http.StatusOK, apiCall(t, "PATCH", s.URL+"/v1/endpoints/"+badID, badKey, map[string]any{"description": "still here"}, nil))
	require.Equal(t, http.StatusOK, apiCall(t, "DELETE", s.URL+"/v1/endpoints/"+badID, badKey, nil, nil))
}

// TestWebSessionKeyStoredSealed: the dashboard's session key (the CSRF MAC
// key, settings.web_session_key) is stored sealed like the other secrets;
// one stored in clear by an earlier version is sealed at the next start and
// stays the same key.
func TestWebSessionKeyStoredSealed(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	require.NoError(t, s.Stop(t))
	conn := rawConn(t, url)
	ring := dbtest.Keys()
	v := settingValue(t, conn, "web_session_key")
	require.True(t, strings.HasPrefix(v, ring.CurrentPrefix()), "sealed: %.12s", v)

	plain := make([]byte, 32)
	_, _ = rand.Read(plain)
	_, err := conn.Exec(t.Context(), `UPDATE settings SET value = $1 WHERE name = 'web_session_key'`, hex.EncodeToString(plain))
	require.NoError(t, err)
	s = startServe(t, map[string]string{"DATABASE_URL": url})
	_, ck := dashboardLogin(t, noRedirects(t), s.URL, restAdmin)
	require.NotNil(t, ck, "the dashboard works on the clear-text key")
	require.NoError(t, s.Stop(t))
	v = settingValue(t, conn, "web_session_key")
	require.True(t, strings.HasPrefix(v, ring.CurrentPrefix()), "sealed at start: %.12s", v)
	opened, err := ring.Open("web_session_key", v)
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(plain), string(opened), "the same key")
}
