//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// TestReplicaReads: with HOOKRELAY_DATABASE_REPLICA_URL naming the local
// standby, the dashboard's message search reads the standby and says how
// current it is. While the standby's replay is paused, a callback
// acknowledged on the primary (and delivered: dispatch reads the primary) is
// missing from the search, and the page says the replica is behind; once
// replay resumes it appears.
func TestReplicaReads(t *testing.T) {
	pair := startPair(t, true)
	s3 := startS3(t)
	env := serviceEnv(pair.URL(), s3, map[string]string{"HOOKRELAY_DATABASE_REPLICA_URL": pair.ReplicaURL()})
	svc := newProc(t, "all", "api,dispatch,web,maintenance", env)
	svc.start()
	dumpLogs(t, svc)
	w := newWorld(t, svc.URL(), 1, 1, load.SinkConfig{})
	ctx := t.Context()

	jar, _ := cookiejar.New(nil)
	ui := &http.Client{Jar: jar, Timeout: 15 * time.Second}
	t.Cleanup(ui.CloseIdleConnections)
	uiLogin(t, ui, svc.URL())
	search := func(key string) string {
		t.Helper()
		resp, err := ui.Get(svc.URL() + "/ui/messages?q=" + url.QueryEscape(key))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		return string(body)
	}
	send := func(key string) string { t.Helper(); return sendCallback(t, svc.URL(), w.carrier.APIKey, key) }

	// Caught up: the callback shows, and the page says where it read.
	id1 := send("R-1")
	require.True(t, waitFor(ctx, 60*time.Second, func() bool { return strings.Contains(search("R-1"), "/ui/messages/"+id1+"?") }),
		"the message never showed in the replica's search")
	page := search("R-1")
	require.Contains(t, page, `id="replica"`)
	require.Contains(t, page, "Read from a replica")

	// Replay paused: acknowledged on the primary, not on the page yet, and
	// the page says the replica is behind.
	standby := pair.ReplicaURL()
	execSQL(t, standby, "SELECT pg_wal_replay_pause()")
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			execSQL(t, standby, "SELECT pg_wal_replay_resume()")
		}
	})
	id2 := send("R-2")
	n, err := queryInt(ctx, pair.URL(), "SELECT count(*) FROM messages WHERE id = $1", mustInt(t, id2))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the callback is not on the primary")
	behind := regexp.MustCompile(`Read from a replica, [0-9.]+m?s behind the primary`)
	require.True(t, waitFor(ctx, 30*time.Second, func() bool { return behind.MatchString(search("R-2")) }),
		"the page never said the paused replica is behind; last: %s", replicaLine(search("R-2")))
	require.NotContains(t, search("R-2"), "/ui/messages/"+id2+"?", "a message the paused replica has not replayed was listed")

	execSQL(t, standby, "SELECT pg_wal_replay_resume()")
	resumed = true
	require.True(t, waitFor(ctx, 60*time.Second, func() bool { return strings.Contains(search("R-2"), "/ui/messages/"+id2+"?") }),
		"the message never showed once replay resumed")
}

// uiLogin logs c in to the dashboard at base with the admin token.
func uiLogin(t *testing.T, c *http.Client, base string) {
	t.Helper()
	resp, err := c.Get(base + "/ui/login")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, m, "no CSRF field on the login page")
	resp, err = c.PostForm(base+"/ui/login", url.Values{"csrf": {string(m[1])}, "token": {adminToken}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	u, _ := url.Parse(base + "/ui/")
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "hr_session" && ck.Value != "" {
			return
		}
	}
	t.Fatal("no dashboard session after login")
}

// sendCallback posts one callback with ordering key key and returns its
// message id.
func sendCallback(t *testing.T, base, apiKey, key string) string {
	t.Helper()
	body := fmt.Sprintf(`{"tracking_no":%q,"status":"in_transit","phase":1,"key":0,"seq":0}`, key)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/callbacks", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		MessageID string `json:"message_id"`
	}
	data, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", data)
	require.NoError(t, json.Unmarshal(data, &out))
	require.NotEmpty(t, out.MessageID)
	return out.MessageID
}

func execSQL(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	_, err := fmt.Sscan(s, &n)
	require.NoError(t, err)
	return n
}

// replicaLine returns the replica note of a page, for failure messages.
func replicaLine(page string) string {
	if i := strings.Index(page, `id="replica"`); i >= 0 {
		return page[i:min(len(page), i+200)]
	}
	return "(no replica note)"
}
