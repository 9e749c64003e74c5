package web_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/eventtype"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/internal/logtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/maintenance"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/sso"
	"github.com/hookrelay/hookrelay/web"
)

const testAdminToken = "hra_test_admin_token_0123456789"

// fixtureOpts are the settings a test changes; zero fields keep the defaults.
type fixtureOpts struct {
	OffloadBytes int           // ingest: payloads above this go to the S3 store
	StatInterval time.Duration // maintenance: > 0 runs the stat sampler this often
	Replays      bool          // run a replay runner (the maintenance holder's) as well
	// FrameAncestors may embed the portal (web.Config.PortalFrameAncestors).
	FrameAncestors []string
	// SSO, when set, gives the single sign-on settings of the dashboard
	// at base (its URL, known before it starts).
	SSO func(base string) *sso.Config
}

// webFixture is the dashboard on a loopback server, on one echo router with
// the API (for traffic), the real operations layer and a running dispatcher
// (whose sender also sends the test events), all on a database of its own.
type webFixture struct {
	URL   string // the server
	store *db.DB
	dbURL string
	Logs  *logtest.Buffer
	// Routes are the router's routes, the dashboard's among them.
	Routes []*echo.Route
	Dash   *web.Dashboard
}

func startWebFixture(t *testing.T, o fixtureOpts) webFixture {
	t.Helper()
	ctx := context.Background()
	env := testenv.New(t, testenv.Options{AdminToken: testAdminToken})
	hs := httptest.NewUnstartedServer(nil)
	t.Cleanup(hs.Close)
	base := "http://" + hs.Listener.Addr().String()
	var ssoCfg *sso.Config
	if o.SSO != nil {
		ssoCfg = o.SSO(base)
	}
	store, payloads, logger := env.DB, env.Payloads, env.Logger
	// No quick retries: the dashboard tests make dead letters from failing
	// endpoints with short schedules, and 1 + n attempts keep them below
	// the circuit's threshold.
	d := dispatch.New(logger, dispatch.Config{AllowPrivateTargets: true, IdlePoll: 20 * time.Millisecond, DrainTimeout: time.Second,
		QuickRetries: []time.Duration{}}, store, payloads, nil)
	catalog := eventtype.NewCatalog(store, eventtype.Config{})
	operations := ops.New(store, ops.Config{Pinger: d, AllowPrivateTargets: true, Audit: audit.New(store, audit.Config{}),
		EventValidator: catalog, Payloads: payloads})
	apiSrv := api.New(logger, api.Config{OffloadBytes: o.OffloadBytes, EventTypes: catalog,
		// The carriers' page shows refusals and health within moments.
		Watch:   ingest.WatchConfig{FlushInterval: 20 * time.Millisecond, StatsInterval: 50 * time.Millisecond},
		Batcher: ingest.BatcherConfig{OnStored: func(_ int, queues []int) { d.WakeQueues(queues) }}}, store, payloads, nil, operations)
	dash, err := web.New(ctx, web.Config{Logger: logger, Store: store, Ops: operations, Presigner: payloads,
		PortalFrameAncestors: o.FrameAncestors, SSO: ssoCfg})
	require.NoError(t, err)

	e := echo.New()
	errs := httperr.New(logger)
	errs.Install(e)
	apiSrv.Register(e)
	dash.Mount(e, "/ui", errs)

	// Stopped in reverse at cleanup: the maintainer, the replay runner, the
	// API (and its last batch's wake-ups), then the dispatcher.
	testenv.Go(t, "the dispatcher", d.Run)
	testenv.Go(t, "the API", apiSrv.Run)
	if o.Replays {
		testenv.Go(t, "the replay runner", maintenance.NewReplayRunner(logger, maintenance.ReplayConfig{Interval: 20 * time.Millisecond}, store).Run)
	}
	if o.StatInterval > 0 {
		mt := maintenance.New(logger, maintenance.Config{StatInterval: o.StatInterval, StatLag: time.Millisecond}, store, payloads, nil)
		testenv.Go(t, "the maintainer", mt.Run)
	}
	hs.Config.Handler = e
	hs.Start()
	return webFixture{URL: base, store: store, dbURL: env.DBURL, Logs: env.Logs, Routes: e.Routes(), Dash: dash}
}
