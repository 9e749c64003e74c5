package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/openapi"
)

var echoParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// Every route the API registers is in the OpenAPI document, and every
// operation of the document is a registered route: a route cannot be added
// undocumented, nor documented and not served.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	e := echo.New()
	api.New(slog.New(slog.DiscardHandler), api.Config{}, nil, nil, nil, nil).Register(e)
	registered := map[string]bool{}
	for _, r := range e.Routes() {
		if !apitest.IsAPI(r.Path) {
			continue
		}
		registered[r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	c, err := apitest.Default()
	require.NoError(t, err)
	documented := map[string]bool{}
	for path, item := range c.Document().Paths.Map() {
		for method := range item.Operations() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	var undocumented, unserved []string
	for r := range registered {
		if !documented[r] {
			undocumented = append(undocumented, r)
		}
	}
	for d := range documented {
		if !registered[d] {
			unserved = append(unserved, d)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unserved)
	require.Empty(t, undocumented, "routes missing from openapi/openapi.json")
	require.Empty(t, unserved, "operations of openapi/openapi.json that the API does not serve")
}

// GET /openapi.json serves the embedded document, without a token.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	b := setup(t, config{})
	resp := b.do(t, http.MethodGet, "/openapi.json", "", nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, openapi.Document, body)
}
