package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// chromiumPath is Debian's chromium; scripts/browser-deps.sh installs it.
const chromiumPath = "/usr/bin/chromium"

// screenshotDirEnv names the folder that receives one PNG per dashboard page;
// `make screenshots` sets it to docs/screenshots (the committed ones the docs
// show). Without it the test still takes each screenshot (so a page that
// cannot be rendered fails) into a temporary folder, and the work tree stays
// as it was.
const screenshotDirEnv = "HOOKRELAY_SCREENSHOT_DIR"

// newBrowser starts a headless chromium with a fresh profile; it fails the
// test (never skips) when chromium is missing.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("browser tests need %s (run scripts/browser-deps.sh): %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(bctx), "start chromium")
	return bctx
}

// browse runs browser actions with a deadline.
func browse(t *testing.T, bctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, waitLimit)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// value runs one browser action that returns a value.
func value[T any](t *testing.T, bctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, waitLimit)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(t, err)
	return v
}

func text(t *testing.T, bctx context.Context, sel string) string {
	t.Helper()
	return strings.TrimSpace(value(t, bctx, chromedp.Text(chromedp.CSS(sel))))
}

// waitLimit bounds every wait of the browser test: generous, because the CI
// machine's two cores are shared; a passing run waits a few seconds.
const waitLimit = 60 * time.Second

// warnings returns the warning and error lines of the service's log.
func warnings(logs string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-20):], "\n")
}

// eventually reloads the page until cond holds (waitLimit at most).
func eventually(t *testing.T, bctx context.Context, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(150 * time.Millisecond)
		browse(t, bctx, chromedp.Reload())
	}
}

func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	saveScreenshot(t, name, value(t, bctx, chromedp.FullScreenshot(100)))
}

// saveScreenshot writes png as name.png (see screenshotDirEnv).
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	require.NotEmpty(t, png, "screenshot of %s", name)
	dir := os.Getenv(screenshotDirEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "hookrelay-screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// sink is a loopback merchant receiver; paths listed in failing answer 500.
type sink struct {
	mu      sync.Mutex
	got     map[string][]string      // path → webhook-ids received with 2xx
	hdrs    map[string][]http.Header // path → their headers, in the same order
	failing atomic.Bool
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/flaky" && s.failing.Load() {
		http.Error(w, "merchant ERP is down", http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	s.got[r.URL.Path] = append(s.got[r.URL.Path], r.Header.Get("webhook-id"))
	if s.hdrs == nil {
		s.hdrs = map[string][]http.Header{}
	}
	s.hdrs[r.URL.Path] = append(s.hdrs[r.URL.Path], r.Header.Clone())
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// headers returns the headers of the requests path received, in order.
func (s *sink) headers(path string) []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.hdrs[path]...)
}

func (s *sink) received(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got[path]...)
}

func login(t *testing.T, bctx context.Context, base, credential, landing string) {
	t.Helper()
	browse(t, bctx,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), credential),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS(landing)),
	)
}

func logout(t *testing.T, bctx context.Context) {
	t.Helper()
	browse(t, bctx, chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#token")))
}

func TestWebBrowser(t *testing.T) {
	t.Parallel()
	snk := &sink{got: map[string][]string{}}
	snk.failing.Store(true)
	hs := httptest.NewServer(snk)
	t.Cleanup(hs.Close)

	f := startWebFixture(t, fixtureOpts{StatInterval: 250 * time.Millisecond})
	waitForPartitionsAhead(t, f.store, 3)
	ctx := context.Background()
	m1, key1 := dbtest.Merchant(t, f.store, &dbtest.MerchantOpts{Name: "Acme Parcels"})
	m2, _ := dbtest.Merchant(t, f.store, &dbtest.MerchantOpts{Name: "Other Shop"})
	flaky, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m1.ID, URL: hs.URL + "/flaky",
		Description: "ERP callbacks", RetrySchedule: []time.Duration{100 * time.Millisecond}})
	steady, _ := dbtest.Endpoint(t, f.store, &dbtest.EndpointOpts{MerchantID: m2.ID, URL: hs.URL + "/steady"})
	// The carrier is made through the API, last: the API reloads its
	// configuration cache before it answers a change made through it, so
	// the callbacks below are routed to the endpoints written directly
	// above (the cache would see those only at its next refresh).
	var carrier struct {
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiDo(t, http.DefaultClient, http.MethodPost, f.URL+"/v1/carriers", testAdminToken,
		map[string]any{"name": "browser-carrier"}, &carrier).StatusCode)
	carrierKey := carrier.APIKey

	// Traffic through the real ingest API: callbacks for the steady merchant,
	// and one for the flaky endpoint that ends as a dead letter (two failed
	// attempts).
	post := func(key string, merchantID int64) error {
		req, err := http.NewRequest(http.MethodPost, f.URL+"/v1/callbacks",
			strings.NewReader(fmt.Sprintf(`{"tracking_no":%q,"status":"in_transit"}`, key)))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+carrierKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Merchant-Id", strconv.FormatInt(merchantID, 10))
		resp, err := apitest.Client(t).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("POST /v1/callbacks: %s", resp.Status)
		}
		return nil
	}
	require.NoError(t, post("SF0000", m1.ID))
	const n = 12
	for i := range n {
		require.NoError(t, post(fmt.Sprintf("SF%04d", i+1), m2.ID))
	}
	var dead db.DeadLetter
	testenv.EventuallyErr(t, waitLimit, func() error {
		rows, err := f.store.DeadLetterList(ctx, db.DeadLetterFilter{EndpointID: flaky.ID}, db.DeadLetterPage{Newest: true}, 10)
		require.NoError(t, err)
		if len(rows) == 1 && len(snk.received("/steady")) == n {
			dead = rows[0]
			return nil
		}
		return fmt.Errorf("%d dead letters and %d/%d deliveries; warnings:\n%s",
			len(rows), len(snk.received("/steady")), n, warnings(f.Logs.String()))
	})

	// Keep a trickle of traffic going while the overview is watched.
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var trafficErr atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-trafficCtx.Done():
				return
			case <-time.After(40 * time.Millisecond):
			}
			if err := post(fmt.Sprintf("TR%05d", i), m2.ID); err != nil {
				trafficErr.Store(err)
				return
			}
		}
	}()
	t.Cleanup(func() { stopTraffic(); wg.Wait() })

	b := newBrowser(t)
	base := f.URL
	browse(t, b, chromedp.Navigate(base+"/ui/login"), chromedp.WaitVisible(chromedp.CSS("#token")))
	screenshot(t, b, "login")
	login(t, b, base, testAdminToken, "#overview-cards")

	// Overview: the test's traffic shows in the totals and, once sampled, the rates.
	num := func(sel string) float64 {
		v, _ := strconv.ParseFloat(strings.ReplaceAll(text(t, b, sel), ",", ""), 64)
		return v
	}
	eventually(t, b, "traffic on the overview", func() bool {
		return num("#ingested-hour") > n && num("#delivered-hour") > n && num("#ingest-rate") > 0 &&
			num("#deliver-rate") > 0 && text(t, b, "#dead-count") == "1"
	})
	screenshot(t, b, "overview")
	stopTraffic()
	wg.Wait()
	require.Nil(t, trafficErr.Load())

	// Endpoints: disable, then enable, the steady endpoint.
	sid := strconv.FormatInt(steady.ID, 10)
	browse(t, b, chromedp.Navigate(base+"/ui/endpoints"), chromedp.WaitVisible(chromedp.CSS("#endpoint-"+sid)))
	screenshot(t, b, "endpoints")
	// The merchant by name, and its endpoint's "HTTP 500" on one line even
	// in a narrow window (it wrapped as "HTTP 50" / "0").
	flakyRow := "#endpoint-" + strconv.FormatInt(flaky.ID, 10)
	require.Contains(t, text(t, b, flakyRow), "Acme Parcels")
	browse(t, b, chromedp.EmulateViewport(640, 900))
	lines := value(t, b, chromedp.Evaluate[int](`(() => { const s = document.querySelector("`+flakyRow+` .excerpt .status"); return s ? s.getClientRects().length : -1 })()`))
	browse(t, b, chromedp.EmulateViewport(1280, 900)) // back to newBrowser's window, for the screenshots
	require.Equal(t, 1, lines, "HTTP 500 in one line box")
	browse(t, b, chromedp.Click(chromedp.CSS("#disable-"+sid)), chromedp.WaitVisible(chromedp.CSS("#enable-"+sid)))
	ep, err := f.store.EndpointGet(ctx, steady.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointDisabled, ep.Status)
	require.Contains(t, text(t, b, "#endpoint-"+sid), "disabled")
	browse(t, b, chromedp.Click(chromedp.CSS("#enable-"+sid)), chromedp.WaitVisible(chromedp.CSS("#disable-"+sid)))
	ep, err = f.store.EndpointGet(ctx, steady.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointEnabled, ep.Status)

	// The audit log: the disable and the enable just made, newest first,
	// with what they changed; and the login that opened this session.
	browse(t, b, chromedp.Navigate(base+"/ui/audit?target_type=endpoint&target_id="+sid), chromedp.WaitVisible(chromedp.CSS("#audit")))
	require.Equal(t, []string{"endpoint.enable", "endpoint.disable"},
		value(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#audit .audit-action")].map(e => e.textContent)`)))
	browse(t, b, chromedp.Click(chromedp.CSS("#audit tr.audit-changes summary")), chromedp.WaitVisible(chromedp.CSS("#audit table.diff")))
	require.Contains(t, text(t, b, "#audit table.diff"), "Status")
	require.Contains(t, text(t, b, "#audit table.diff"), `"disabled"`)
	screenshot(t, b, "audit-log")
	browse(t, b, chromedp.Navigate(base+"/ui/audit?action=login"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	require.Contains(t, text(t, b, "#audit"), "break_glass")
	require.Contains(t, text(t, b, "#audit"), "admin token")

	// Dead letters: inspect it, then retry it through the confirmation page
	// and watch it get delivered.
	did := strconv.FormatInt(dead.ID, 10)
	browse(t, b, chromedp.Navigate(base+"/ui/dead-letters?endpoint_id="+strconv.FormatInt(flaky.ID, 10)),
		chromedp.WaitVisible(chromedp.CSS("#dl-"+did)))
	screenshot(t, b, "dead-letters")
	require.Contains(t, text(t, b, "#dl-"+did), "Acme Parcels")
	require.Contains(t, text(t, b, "#dl-"+did), "browser-carrier")
	browse(t, b, chromedp.Navigate(base+"/ui/deliveries/"+did), chromedp.WaitVisible(chromedp.CSS("#attempts")))
	require.Equal(t, "dead", text(t, b, "#delivery-state"))
	require.Contains(t, text(t, b, "#delivery-carrier"), "browser-carrier")
	require.Contains(t, text(t, b, "#delivery-ordering-key"), "SF0000")
	attempts := value(t, b, chromedp.Evaluate[int](`document.querySelectorAll("#attempts tr.attempt").length`))
	require.Equal(t, 2, attempts, "one attempt plus one retry")
	require.Contains(t, text(t, b, "#attempts"), "500")
	screenshot(t, b, "delivery")
	browse(t, b, chromedp.Click(chromedp.CSS("#message-link")), chromedp.WaitVisible(chromedp.CSS("#payload")))
	require.Contains(t, text(t, b, "#payload"), `"tracking_no": "SF0000"`)
	require.Empty(t, value(t, b, chromedp.Evaluate[string](`(document.querySelector("nav a.on")||{}).textContent||""`)),
		"the message page highlights no navigation entry (not Dead letters)")
	screenshot(t, b, "message")

	snk.failing.Store(false)
	browse(t, b, chromedp.Navigate(base+"/ui/dead-letters?endpoint_id="+strconv.FormatInt(flaky.ID, 10)),
		chromedp.WaitVisible(chromedp.CSS("#check-"+did)),
		chromedp.Click(chromedp.CSS("#check-"+did)),
		chromedp.Click(chromedp.CSS("#retry-selected")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-count")))
	require.Contains(t, text(t, b, "#confirm-count"), "retry 1 dead letter")
	screenshot(t, b, "confirm")
	browse(t, b, chromedp.Click(chromedp.CSS("#confirm-apply")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	require.Contains(t, text(t, b, "#flash"), "Retried 1")
	browse(t, b, chromedp.Navigate(base+"/ui/deliveries/"+did), chromedp.WaitVisible(chromedp.CSS("#delivery-state")))
	eventually(t, b, "the retried dead letter delivered", func() bool { return text(t, b, "#delivery-state") == "delivered" })
	require.Equal(t, []string{fmt.Sprintf("msg_%d", dead.MessageID)}, snk.received("/flaky"))

	browse(t, b, chromedp.Navigate(base+"/ui/database"), chromedp.WaitVisible(chromedp.CSS("#partitions")))
	require.Contains(t, text(t, b, "#tables"), "deliveries")
	// The page warns when the server runs without autovacuum (CI's does).
	h, err := f.store.HealthSnapshot(ctx)
	require.NoError(t, err)
	warned := value(t, b, chromedp.Evaluate[bool](`document.querySelector("#autovacuum-warning") !== null`))
	require.Equal(t, !h.Autovacuum, warned)
	if warned {
		require.Contains(t, text(t, b, "#autovacuum-warning"), "autovacuum off")
	}
	screenshot(t, b, "database")

	// Replay: the steady endpoint's last day (the form's proposal) up to the
	// confirmation, which counts what would be sent again.
	browse(t, b, chromedp.Navigate(base+"/ui/endpoints/"+sid+"/replay"), chromedp.WaitVisible(chromedp.CSS("#replay-form")),
		chromedp.Click(chromedp.CSS("#replay-count")), chromedp.WaitVisible(chromedp.CSS("#confirm-count")))
	m := regexp.MustCompile(`This will send ([\d,]+) deliveries`).FindStringSubmatch(text(t, b, "#confirm-count"))
	require.NotNil(t, m, text(t, b, "#confirm-count"))
	count, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	require.NoError(t, err)
	require.GreaterOrEqual(t, count, n)
	screenshot(t, b, "replay-confirm")

	// Operational webhooks: add one; its secret shows once.
	browse(t, b, chromedp.Navigate(base+"/ui/ops-endpoints"), chromedp.WaitVisible(chromedp.CSS("#ops-form")),
		chromedp.SendKeys(chromedp.CSS("#url"), hs.URL+"/ops"),
		chromedp.Click(chromedp.CSS(`input[value="endpoint.disabled"]`)),
		chromedp.SendKeys(chromedp.CSS("#description"), "on-call pager"),
		chromedp.Click(chromedp.CSS("#ops-add")), chromedp.WaitVisible(chromedp.CSS("#ops-secret")))
	require.True(t, strings.HasPrefix(text(t, b, "#ops-secret"), "whsec_"))
	require.Contains(t, text(t, b, "#ops-endpoints"), "on-call pager")
	screenshot(t, b, "ops-endpoints")
	logout(t, b)

	// Merchant view: own endpoints and secret; nothing of others, no ops pages.
	login(t, b, base, key1, "#my-endpoints")
	require.Contains(t, text(t, b, "#my-endpoints"), "/flaky")
	require.NotContains(t, text(t, b, "#my-endpoints"), "/steady")
	screenshot(t, b, "merchant")
	fid := strconv.FormatInt(flaky.ID, 10)
	browse(t, b, chromedp.Navigate(base+"/ui/m/endpoints/"+fid), chromedp.WaitVisible(chromedp.CSS("#reveal")),
		chromedp.Click(chromedp.CSS("#reveal")), chromedp.WaitVisible(chromedp.CSS("code.secret")))
	require.True(t, strings.HasPrefix(text(t, b, "code.secret"), "whsec_"))
	require.Contains(t, text(t, b, "#recent"), "success")
	browse(t, b, chromedp.Click(chromedp.CSS("#send-test")), chromedp.WaitVisible(chromedp.CSS("#ping-result")))
	require.Contains(t, text(t, b, "#ping-result"), "HTTP 200")
	screenshot(t, b, "merchant-endpoint")
	for path, want := range map[string]string{
		"/ui/m/endpoints/" + sid:  "404",
		"/ui/m/deliveries/" + did: "", // their own: allowed
		"/ui/endpoints":           "403",
		"/ui/dead-letters":        "403",
		"/ui/database":            "403",
		"/ui/deliveries/" + did:   "403",
	} {
		browse(t, b, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS("main")))
		status := value(t, b, chromedp.Evaluate[string](`(document.getElementById("error-status")||{}).textContent||""`))
		if want == "" {
			require.Empty(t, status, path)
		} else {
			require.True(t, strings.HasPrefix(status, want), "%s: got %q", path, status)
		}
	}
}
