package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/internal/logtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/storage"
)

const adminToken = "hra_test_admin_token_for_ingest"

// bundle is what a test gets from setup.
type bundle struct {
	URL string
	// Handler is the API's router itself, for requests no HTTP client
	// sends and the HTTP server refuses before any handler (a control
	// character in a header value): another front end might pass them on.
	Handler  http.Handler
	DB       *db.DB
	DBURL    string // the test's own database
	Payloads *storage.Store
	S3       *storage.Embedded
	Server   *api.Server
	Logs     *logtest.Buffer
	Registry *prometheus.Registry
}

// config is what a test sets: the API's settings, and those of the
// operations it acts through (the endpoint URL policy).
type config struct {
	api.Config
	Ops ops.Config
}

// setup runs the API on a real database, a real embedded S3 store and a
// loopback HTTP server; cfg fields left zero get test defaults.
func setup(t testing.TB, cfg config) *bundle {
	t.Helper()
	return setupWith(t, cfg, nil)
}

// setupWith is setup with a sender of test events.
func setupWith(t testing.TB, cfg config, pinger ops.Pinger) *bundle {
	t.Helper()
	env := testenv.New(t, testenv.Options{AdminToken: adminToken})
	reg := prometheus.NewRegistry()
	cfg.Ops.Pinger = pinger
	// Every change is recorded, as in production.
	cfg.Ops.Audit = audit.New(env.DB, audit.Config{})
	srv := api.New(env.Logger, cfg.Config, env.DB, env.Payloads, reg, ops.New(env.DB, cfg.Ops))
	e := echo.New()
	httperr.New(env.Logger).Install(e)
	srv.Register(e)
	testenv.Go(t, "the API", srv.Run)
	hs := httptest.NewServer(e)
	t.Cleanup(hs.Close)
	return &bundle{URL: hs.URL, Handler: e, DB: env.DB, DBURL: env.DBURL, Payloads: env.Payloads, S3: env.S3, Server: srv, Logs: env.Logs, Registry: reg}
}

// call sends a request with an optional bearer token and JSON body (a
// []byte is sent as is) and returns the status and decoded body.
func (b *bundle) call(t testing.TB, method, path, token string, body any, hdr ...string) (int, map[string]any) {
	t.Helper()
	resp := b.do(t, method, path, token, body, hdr...)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), "body %s", raw)
	}
	return resp.StatusCode, out
}

func (b *bundle) do(t testing.TB, method, path, token string, body any, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.URL+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := apitest.Client(t).Do(req)
	require.NoError(t, err)
	return resp
}

// errCode returns the error code of an error answer.
func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// mustCreate creates an object through the API and returns its answer.
func (b *bundle) mustCreate(t testing.TB, path, token string, body any) map[string]any {
	t.Helper()
	st, out := b.call(t, http.MethodPost, path, token, body)
	require.Equal(t, http.StatusCreated, st, "%v", out)
	return out
}

// world is a carrier, two merchants and one endpoint each, made through the API.
type world struct {
	CarrierID, CarrierKey string
	M1, M1Key, M2, M2Key  string
	E1, E1Secret, E2      string
}

func (b *bundle) world(t testing.TB) world {
	t.Helper()
	var w world
	c := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "sf"})
	w.CarrierID, w.CarrierKey = c["id"].(string), c["api_key"].(string)
	m1 := b.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop-one"})
	m2 := b.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop-two"})
	w.M1, w.M1Key, w.M2, w.M2Key = m1["id"].(string), m1["api_key"].(string), m2["id"].(string), m2["api_key"].(string)
	e1 := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/one"})
	e2 := b.mustCreate(t, "/v1/endpoints", w.M2Key, map[string]any{"url": "http://127.0.0.1:9/two"})
	w.E1, w.E1Secret, w.E2 = e1["id"].(string), e1["secret"].(string), e2["id"].(string)
	return w
}
