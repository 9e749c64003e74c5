package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/logtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// localReceiver is the developer's server that `hookrelay listen` forwards
// to: it records what it accepted and refuses each event named in failOnce
// the first time it comes.
type localReceiver struct {
	t      *testing.T
	secret string

	mu       sync.Mutex
	accepted []receivedEvent
	refused  int
	failOnce map[string]bool // event type → refuse its first arrival
}

type receivedEvent struct {
	ID, Key, Type string
}

func (r *localReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id, ts := req.Header.Get("Webhook-Id"), req.Header.Get("Webhook-Timestamp")
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(r.secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !strings.Contains(req.Header.Get("Webhook-Signature"), want) || !json.Valid(body) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	ev := receivedEvent{ID: id, Key: req.Header.Get("X-Hookrelay-Ordering-Key"), Type: req.Header.Get("X-Hookrelay-Event-Type")}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failOnce[ev.Type] {
		delete(r.failOnce, ev.Type)
		r.refused++
		http.Error(w, "not yet", http.StatusInternalServerError)
		return
	}
	r.accepted = append(r.accepted, ev)
	w.WriteHeader(http.StatusNoContent)
}

func (r *localReceiver) snapshot() ([]receivedEvent, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedEvent{}, r.accepted...), r.refused
}

// runningListen is a `hookrelay listen` running through run().
type runningListen struct {
	out  *logtest.Buffer
	stop context.CancelFunc
	done chan error
}

func startListen(t *testing.T, getenv func(string) string, args ...string) *runningListen {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &runningListen{out: &logtest.Buffer{}, stop: cancel, done: make(chan error, 1)}
	go func() {
		l.done <- run(ctx, append([]string{"hookrelay", "listen"}, args...), getenv, l.out, l.out)
	}()
	t.Cleanup(cancel)
	return l
}

func (l *runningListen) Stop(t *testing.T) {
	t.Helper()
	l.stop()
	select {
	case err := <-l.done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("listen did not stop")
	}
}

// TestListenForwardsInOrderAndResumes: `hookrelay listen` forwards a poll
// endpoint's events to a local server with their signed headers, one line
// each; a refused event stops the batch and comes again after a pause
// before the later events of its key; only accepted events are
// acknowledged; after a restart it resumes from its cursor file, with no
// event forwarded twice once accepted.
func TestListenForwardsInOrderAndResumes(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil, "--roles", "api")
	const admin = "hra_test_admin_token_0123456789"
	_, _, carrier := ingestCall(t, s, http.MethodPost, "/v1/carriers", admin, map[string]any{"name": "sf"})
	_, _, merchant := ingestCall(t, s, http.MethodPost, "/v1/merchants", admin, map[string]any{"name": "shop"})
	mkey, ckey := merchant["api_key"].(string), carrier["api_key"].(string)
	st, _, ep := ingestCall(t, s, http.MethodPost, "/v1/endpoints", mkey, map[string]any{"type": "poll"})
	require.Equal(t, http.StatusCreated, st, "%v", ep)
	epID := ep["id"].(string)

	recv := &localReceiver{t: t, secret: ep["secret"].(string), failOnce: map[string]bool{"e1": true}}
	local := httptest.NewServer(recv)
	t.Cleanup(local.Close)
	send := func(key, typ string) {
		st, _, out := ingestCall(t, s, http.MethodPost, "/v1/callbacks", ckey, []byte(fmt.Sprintf(`{"tracking_no":%q,"status":%q}`, key, typ)))
		require.Equal(t, http.StatusAccepted, st, "%v", out)
	}
	env := map[string]string{"HOOKRELAY_URL": s.URL, "HOOKRELAY_API_KEY": mkey}
	getenv := func(k string) string { return env[k] }
	cursorFile := filepath.Join(t.TempDir(), "cursor")
	args := []string{"--endpoint", epID, "--forward-to", local.URL + "/hook", "--cursor-file", cursorFile, "--wait", "2s", "--max-backoff", "1s"}

	send("K1", "e0")
	send("K1", "e1")
	send("K2", "e0")
	send("K1", "e2")
	l := startListen(t, getenv, args...)
	testenv.Eventually(t, 30*time.Second, "four events accepted", func() bool {
		acc, _ := recv.snapshot()
		return len(acc) == 4
	})
	acc, refused := recv.snapshot()
	require.Equal(t, 1, refused)
	var k1 []string
	for _, ev := range acc {
		if ev.Key == "K1" {
			k1 = append(k1, ev.Type)
		}
	}
	require.Equal(t, []string{"e0", "e1", "e2"}, k1, "one key's events in order through the refusal")
	testenv.Eventually(t, 30*time.Second, "everything acknowledged", func() bool {
		_, _, out := ingestCall(t, s, http.MethodGet, "/v1/endpoints/"+epID, mkey, nil)
		lag, _ := out["lag"].(map[string]any)
		return lag != nil && lag["pending"] == float64(0)
	})
	l.Stop(t)
	lines := l.out.String()
	require.Contains(t, lines, "e1 key=K1 → 500")
	require.Contains(t, lines, "e1 key=K1 → 204")
	require.Contains(t, lines, "trying again in")
	saved, err := readCursor(cursorFile)
	require.NoError(t, err)
	require.NotEmpty(t, saved)

	// Stopped: two more callbacks; a restart forwards those two only.
	send("K2", "e3")
	send("K3", "e4")
	l = startListen(t, getenv, args...)
	testenv.Eventually(t, 30*time.Second, "the two new events accepted", func() bool {
		acc, _ := recv.snapshot()
		return len(acc) == 6
	})
	l.Stop(t)
	acc, _ = recv.snapshot()
	ids := map[string]bool{}
	for _, ev := range acc {
		require.False(t, ids[ev.ID], "%s forwarded again after it was accepted", ev.ID)
		ids[ev.ID] = true
	}
	require.Equal(t, "e3", acc[4].Type)
	require.Equal(t, "e4", acc[5].Type)
}

// TestListenRefusesRemoteForward: a --forward-to not on this machine is
// refused unless --allow-remote; the key comes from the environment only.
func TestListenRefusesRemoteForward(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOKRELAY_API_KEY": "hrm_x"}
	getenv := func(k string) string { return env[k] }
	var out strings.Builder
	err := run(context.Background(), []string{"hookrelay", "listen", "--endpoint", "1", "--forward-to", "http://203.0.113.7/hook"}, getenv, &out, &out)
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, err.Error(), "--allow-remote")
	for _, ok := range []string{"http://localhost:3000/hook", "http://127.0.0.1:3000/hook", "http://[::1]:3000/hook"} {
		require.NoError(t, checkForwardTo(ok, false), ok)
	}
	require.NoError(t, checkForwardTo("https://erp.example/hook", true))
	require.Error(t, checkForwardTo("ftp://localhost/x", true))
	err = run(context.Background(), []string{"hookrelay", "listen", "--endpoint", "1", "--forward-to", "http://localhost:3000/"},
		func(string) string { return "" }, &out, &out)
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, err.Error(), "HOOKRELAY_API_KEY")
}
