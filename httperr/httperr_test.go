package httperr_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/httperr"
)

func TestHandler(t *testing.T) {
	var logs bytes.Buffer
	e := echo.New()
	h := httperr.New(slog.New(slog.NewTextHandler(&logs, nil)))
	h.Install(e)
	h.Render("/ui", func(c echo.Context, a httperr.Answer) error {
		return c.HTML(a.Status, "<p>"+string(a.Code)+": "+a.Message+"</p>")
	})
	fail := func(err error) echo.HandlerFunc { return func(echo.Context) error { return err } }
	e.GET("/v1/gone", fail(hookrelay.Errorf(hookrelay.EGONE, "it went")))
	e.GET("/v1/busy", fail(httperr.WithRetryAfter(hookrelay.Errorf(hookrelay.ERATELIMIT, "slow down"), 7)))
	e.Match([]string{"GET", "HEAD"}, "/v1/down", fail(hookrelay.Errorf(hookrelay.EUNAVAILABLE, "database unavailable")))
	e.GET("/v1/bug", fail(errors.New("secret cause")))
	e.GET("/ui/missing", fail(hookrelay.Errorf(hookrelay.ENOTFOUND, "delivery not found")))
	e.GET("/uix", fail(hookrelay.Errorf(hookrelay.ENOTFOUND, "not the dashboard")))

	do := func(method, path string) (*httptest.ResponseRecorder, httperr.Body) {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		var b httperr.Body
		if rec.Header().Get("Content-Type") == echo.MIMEApplicationJSON {
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &b))
		}
		return rec, b
	}
	for _, c := range []struct {
		method, path  string
		status        int
		code, message string
		retryAfter    string
	}{
		{"GET", "/v1/gone", 410, "gone", "it went", ""},
		{"GET", "/v1/busy", 429, "rate_limited", "slow down", "7"},
		{"GET", "/v1/down", 503, "unavailable", "database unavailable", "1"},
		{"GET", "/v1/bug", 500, "internal", "internal error", ""},
		{"GET", "/v1/nope", 404, "not_found", "Not Found", ""},
		{"POST", "/v1/gone", 405, "method_not_allowed", "Method Not Allowed", ""},
		{"GET", "/uix", 404, "not_found", "not the dashboard", ""},
	} {
		rec, b := do(c.method, c.path)
		require.Equal(t, c.status, rec.Code, c.path)
		require.Equal(t, c.code, b.Error.Code, c.path)
		require.Equal(t, c.message, b.Error.Message, c.path)
		require.Equal(t, c.retryAfter, rec.Header().Get("Retry-After"), c.path)
	}
	require.Contains(t, logs.String(), "secret cause", "the cause of a 500 is logged")

	rec, _ := do("GET", "/ui/missing")
	require.Equal(t, 404, rec.Code)
	require.Equal(t, "<p>not_found: delivery not found</p>", rec.Body.String())
	rec, _ = do("GET", "/ui/nope")
	require.Equal(t, 404, rec.Code)
	require.Equal(t, "<p>not_found: Not Found</p>", rec.Body.String(), "echo's own errors under the prefix too")
	rec, _ = do("HEAD", "/v1/down")
	require.Equal(t, 503, rec.Code)
	require.Empty(t, rec.Body.String())
}
