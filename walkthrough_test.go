//go:build unix

package hookrelay_test

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/logtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// The API's address the walkthroughs name (make run's default
// HOOKRELAY_ADDR) and the receiver's port; the test replaces both with its
// own.
const (
	docAPI       = "http://127.0.0.1:8080"
	docReceiver  = "9999"
	blockTimeout = 60 * time.Second
)

// TestDocWalkthroughs runs the walkthroughs of README.md and docs/api.md as a
// reader pastes them, each against a `hookrelay serve` of its own, so that
// the docs cannot drift from the product again.
//
// Which blocks run is marked by an HTML comment (invisible on GitHub) on the
// line right before a ```sh block:
//
//	<!-- doc-test: receiver -->             the receiver (README.md only):
//	                                        started first, in the background,
//	                                        with bash, as written
//	<!-- doc-test: run -->                  run in one bash session, in the
//	                                        order of the page, under
//	                                        set -euo pipefail
//	<!-- doc-test: run after-delivery -->   the same, once the receiver has
//	                                        printed a delivery and hookrelay
//	                                        recorded it delivered
//
// Unmarked blocks are not run (`make demo` itself is not: the test starts the
// server). The server gets the variables the Makefile's demo target sets,
// read from the Makefile, as the README tells the reader to run it. The only
// substitutions in the blocks: the API's address http://127.0.0.1:8080
// becomes the test server's, and the receiver's port 9999 a free one. The
// session's working directory holds data/admin-token, where make run keeps
// the admin token, and the pages read it from there. The walkthroughs need
// bash, curl, jq and python3, which the README names; the test fails without
// them.
//
// A page passes when every block exits 0, no API answer in its session is an
// error, the receiver printed a POST whose webhook-signature verifies under
// the secret the endpoint's registration answered, and the blocks run after
// the delivery show it delivered.
func TestDocWalkthroughs(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's walkthrough needs %s: %v", tool, err)
		}
	}
	receiver, readme := docBlocks(t, "README.md")
	if receiver == "" {
		t.Fatal("README.md marks no receiver block")
	}
	if !strings.Contains(receiver, `("127.0.0.1", `+docReceiver+`)`) {
		t.Fatalf("README.md: the receiver no longer listens on (\"127.0.0.1\", %s); update this test:\n%s", docReceiver, receiver)
	}
	other, api := docBlocks(t, filepath.Join("docs", "api.md"))
	if other != "" {
		t.Fatal("docs/api.md marks a receiver block: the README's is the one")
	}
	demoEnv := makeDemoEnv(t, readFile(t, "Makefile"))
	bin, err := testenv.BuildHookrelay(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for page, blocks := range map[string][]docBlock{"README.md": readme, "docs/api.md": api} {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			runWalkthrough(t, bin, demoEnv, receiver, blocks)
		})
	}
}

// runWalkthrough starts serve and the receiver, runs blocks in one bash
// session and checks the delivery (see TestDocWalkthroughs).
func runWalkthrough(t *testing.T, bin string, demoEnv []string, receiver string, blocks []docBlock) {
	port := freePort(t)
	var api string // the server's base URL, once it serves
	substitute := func(block string) string {
		out := strings.ReplaceAll(block, docAPI, api)
		out = strings.ReplaceAll(out, `("127.0.0.1", `+docReceiver+`)`, `("127.0.0.1", `+port+`)`)
		return strings.ReplaceAll(out, "127.0.0.1:"+docReceiver, "127.0.0.1:"+port)
	}
	work := t.TempDir()
	data := filepath.Join(work, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	const token = "hra_doc_walkthrough_admin_token"
	if err := os.WriteFile(filepath.Join(data, "admin-token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	serveEnv := append(cleanEnv(),
		"DATABASE_URL="+dbtest.NewURL(t),
		"HOOKRELAY_ADDR=127.0.0.1:0",
		"HOOKRELAY_S3_EMBED_ADDR=127.0.0.1:0",
		"HOOKRELAY_DATA_DIR="+data,
		"HOOKRELAY_ADMIN_TOKEN="+token,
		"HOOKRELAY_ENCRYPTION_KEY="+dbtest.TestEncryptionKey,
		"HOOKRELAY_LOG_FORMAT=json",
	)
	serveEnv = append(serveEnv, demoEnv...)
	serveLogs := &logtest.Buffer{}
	serve := exec.Command(bin, "serve")
	serve.Dir, serve.Env, serve.Stdout, serve.Stderr = work, serveEnv, serveLogs, serveLogs
	serveDone := startGroup(t, serve, syscall.SIGTERM)
	testenv.EventuallyErr(t, blockTimeout, func() error {
		exited(t, serveDone, "hookrelay serve", serveLogs)
		if addr := servingAddr(serveLogs.String()); addr != "" {
			api = "http://" + addr
			return nil
		}
		return fmt.Errorf("hookrelay serve has not logged its address; logs:\n%s", serveLogs)
	})

	rxOut, rxErr := &logtest.Buffer{}, &logtest.Buffer{}
	rx := exec.Command("bash", "-c", substitute(receiver))
	rx.Dir, rx.Env, rx.Stdout, rx.Stderr = work, cleanEnv(), rxOut, rxErr
	rxDone := startGroup(t, rx, syscall.SIGKILL)
	testenv.EventuallyErr(t, blockTimeout, func() error {
		exited(t, rxDone, "the receiver", rxErr)
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			return fmt.Errorf("the receiver does not listen: %v", err)
		}
		return c.Close()
	})

	sessOut := &logtest.Buffer{}
	sess := exec.Command("bash")
	sess.Dir, sess.Env, sess.Stdout, sess.Stderr = work, cleanEnv(), sessOut, sessOut
	stdin, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	sessDone := startGroup(t, sess, syscall.SIGKILL)
	send := func(s string) {
		t.Helper()
		if _, err := fmt.Fprintln(stdin, s); err != nil {
			t.Fatalf("bash session: %v\n%s", err, sessOut)
		}
	}
	send("set -euo pipefail")
	var delivery string
	for i, b := range blocks {
		if b.afterDelivery && delivery == "" {
			testenv.EventuallyErr(t, blockTimeout, func() error {
				if delivery = firstRequest(rxOut.String()); delivery == "" {
					return fmt.Errorf("no delivery at the receiver; it printed:\n%s%s\nthe walkthrough's output:\n%s\nserve logs:\n%s", rxOut, rxErr, sessOut, serveLogs)
				}
				return nil
			})
			// The receiver prints before it answers, and the answer is
			// recorded a moment later: a reader reads first.
			testenv.EventuallyErr(t, blockTimeout, func() error { return recordedDelivered(api, token) })
		}
		file := filepath.Join(work, fmt.Sprintf("block-%d.sh", i+1))
		if err := os.WriteFile(file, []byte(substitute(b.text)), 0o600); err != nil {
			t.Fatal(err)
		}
		done := fmt.Sprintf("doc-test: block %d done", i+1)
		send(fmt.Sprintf("source %q </dev/null\necho %q", file, done))
		testenv.EventuallyErr(t, blockTimeout, func() error {
			exited(t, sessDone, fmt.Sprintf("bash, in block %d:\n%s\n", i+1, b.text), sessOut)
			if !strings.Contains(sessOut.String(), done) {
				return fmt.Errorf("block %d has not finished; output so far:\n%s", i+1, sessOut)
			}
			return nil
		})
		if out := sessOut.String(); strings.Contains(out, `{"error":`) {
			t.Fatalf("an API answer in block %d is an error:\n%s\noutput:\n%s", i+1, b.text, out)
		}
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitFor(t, sessDone, blockTimeout, "the bash session to end"); err != nil {
		t.Fatalf("bash session: %v\n%s", err, sessOut)
	}
	out := sessOut.String()
	t.Logf("the walkthrough's output:\n%s", out)
	t.Logf("the receiver's output:\n%s%s", rxOut, rxErr)

	if delivery == "" {
		t.Fatalf("no block of the page is marked to run after the delivery, which the walkthrough must show")
	}
	secret := regexp.MustCompile(`"secret":"(whsec_[A-Za-z0-9+/=]+)"`).FindStringSubmatch(out)
	if secret == nil {
		t.Fatalf("the walkthrough's output shows no endpoint secret:\n%s", out)
	}
	verifyDelivery(t, delivery, secret[1])
	if !strings.Contains(out, `"status":"delivered"`) {
		t.Errorf("the walkthrough's blocks after the delivery do not show it delivered:\n%s", out)
	}
}

// docBlock is a block of a page that the walkthrough test runs.
type docBlock struct {
	text          string
	afterDelivery bool
}

var docMarker = regexp.MustCompile(`^<!-- doc-test: (receiver|run|run after-delivery) -->$`)

// docBlocks returns the receiver block of page ("" when it has none) and its
// blocks to run, in order, failing the test when it marks more than one
// receiver or nothing to run, or when a marker is not followed by a ```sh
// block.
func docBlocks(t *testing.T, page string) (receiver string, run []docBlock) {
	t.Helper()
	lines := strings.Split(readFile(t, page), "\n")
	receivers := 0
	for i := 0; i < len(lines); i++ {
		m := docMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			t.Fatalf("%s:%d: %s is not followed by a ```sh block", page, i+1, lines[i])
		}
		var body []string
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			body = append(body, lines[j])
		}
		if j == len(lines) {
			t.Fatalf("%s:%d: the block is not closed", page, i+2)
		}
		text := strings.Join(body, "\n") + "\n"
		switch m[1] {
		case "receiver":
			receiver = text
			receivers++
		default:
			run = append(run, docBlock{text: text, afterDelivery: m[1] == "run after-delivery"})
		}
		i = j
	}
	if receivers > 1 || len(run) == 0 {
		t.Fatalf("%s marks %d receiver blocks and %d blocks to run; a walkthrough needs at most one receiver and its calls", page, receivers, len(run))
	}
	return receiver, run
}

// makeDemoEnv returns the VAR=value assignments with which the Makefile's
// demo target runs scripts/run.sh: what the README tells the reader to run
// the server with.
func makeDemoEnv(t *testing.T, makefile string) []string {
	t.Helper()
	recipe := regexp.MustCompile(`(?m)^demo:.*\n((?:\t.*\n)+)`).FindStringSubmatch(makefile)
	if recipe == nil {
		t.Fatal("the Makefile has no demo target, which README.md's walkthrough starts")
	}
	run := regexp.MustCompile(`(?m)^\t((?:HOOKRELAY_[A-Z0-9_]+=\S+\s+)+)scripts/run\.sh`).FindStringSubmatch(recipe[1])
	if run == nil {
		t.Fatalf("the Makefile's demo target does not run scripts/run.sh with HOOKRELAY_ variables:\n%s", recipe[1])
	}
	env := strings.Fields(run[1])
	if !strings.Contains(run[1], "HOOKRELAY_ALLOW_PRIVATE_TARGETS=true") {
		t.Fatalf("the Makefile's demo target does not allow private targets, so the README's receiver on 127.0.0.1 would be refused: %v", env)
	}
	return env
}

// cleanEnv is the test's environment without DATABASE_URL and HOOKRELAY_
// variables: a reader's shell, and nothing that configures serve but what
// the test sets.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOOKRELAY_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			out = append(out, kv)
		}
	}
	return out
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startGroup starts cmd in a process group of its own and returns a channel
// that receives its exit; when the test ends the group gets stop (then
// SIGKILL after 30 s), so that no child of a shell outlives the test.
func startGroup(t *testing.T, cmd *exec.Cmd, stop syscall.Signal) <-chan error {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		done <- cmd.Wait()
		close(ended)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, stop)
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30s", cmd.Path)
		}
		// Whatever else the group left behind.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	return done
}

// recordedDelivered returns nil once some endpoint has a delivered delivery.
func recordedDelivered(api, token string) error {
	get := func(path string, v any) error {
		req, err := http.NewRequest(http.MethodGet, api+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(v)
	}
	type list struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	var endpoints list
	if err := get("/v1/endpoints", &endpoints); err != nil {
		return err
	}
	for _, ep := range endpoints.Items {
		var delivered list
		if err := get("/v1/endpoints/"+ep.ID+"/deliveries?status=delivered", &delivered); err != nil {
			return err
		}
		if len(delivered.Items) > 0 {
			return nil
		}
	}
	return fmt.Errorf("no delivery recorded as delivered yet (%d endpoints)", len(endpoints.Items))
}

// exited fails the test when done has received a process's exit.
func exited(t *testing.T, done <-chan error, what string, output fmt.Stringer) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s exited: %v\n%s", what, err, output)
	default:
	}
}

// servingAddr returns the address in serve's "hookrelay serving" log line.
func servingAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "hookrelay serving" {
			return line.Addr
		}
	}
	return ""
}

var requestLine = regexp.MustCompile(`(?m)^POST \S+ HTTP/1\.[01]$`)

// firstRequest returns what the receiver printed of its first POST (request
// line, headers, a blank line and the body's line), or "" before it has
// printed the body.
func firstRequest(out string) string {
	loc := requestLine.FindStringIndex(out)
	if loc == nil {
		return ""
	}
	rest := out[loc[0]:]
	head, body, ok := strings.Cut(rest, "\n\n")
	if !ok {
		return ""
	}
	body = strings.TrimLeft(body, "\n")
	line, _, ok := strings.Cut(body, "\n")
	if !ok {
		return ""
	}
	return head + "\n\n" + line
}

// verifyDelivery checks that the printed request carries Standard Webhooks
// headers whose v1 signature verifies under secret.
func verifyDelivery(t *testing.T, printed, secret string) {
	t.Helper()
	head, body, _ := strings.Cut(printed, "\n\n")
	_, headers, _ := strings.Cut(head, "\n")
	h, err := textproto.NewReader(bufio.NewReader(strings.NewReader(headers + "\n\n"))).ReadMIMEHeader()
	if err != nil {
		t.Fatalf("the receiver's headers: %v\n%s", err, printed)
	}
	id, ts, sigs := h.Get("Webhook-Id"), h.Get("Webhook-Timestamp"), h.Get("Webhook-Signature")
	if !strings.HasPrefix(id, "msg_") || ts == "" || sigs == "" {
		t.Fatalf("the delivery lacks its webhook-id, webhook-timestamp or webhook-signature:\n%s", printed)
	}
	if !json.Valid([]byte(body)) {
		t.Fatalf("the delivery's body is not the callback's JSON: %q", body)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("the endpoint's secret %q: %v", secret, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + body))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return
		}
	}
	t.Fatalf("webhook-signature %q does not verify under the endpoint's secret (want %s) for:\n%s", sigs, want, printed)
}
