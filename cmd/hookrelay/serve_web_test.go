package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/apitest"
)

// The web role mounts the dashboard on the router, whose one error handler
// answers with the dashboard's page under /ui and with JSON elsewhere (the
// dashboard's own tests are in package web).
func TestServeMountsDashboardAndItsErrorPage(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil, "--roles", "web")
	get := func(path string) (*http.Response, string) {
		resp, err := apitest.Client(t).Get(s.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, page := get("/ui/login")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="token"`)

	resp, page = get("/ui/static/no-such-file.css")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))
	require.Contains(t, page, `id="error-status"`)

	resp, body := get("/v1/nope")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	var answer struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &answer))
	require.Equal(t, "not_found", answer.Error.Code)
}
