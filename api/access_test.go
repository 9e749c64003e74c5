package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/internal/apitest"
)

var openAPIParam = regexp.MustCompile(`\{([A-Za-z_]+)\}`)

// operation is a route of the OpenAPI document, in echo's form.
type operation struct{ Method, Path string }

func documentedOperations(t *testing.T) []operation {
	c, err := apitest.Default()
	require.NoError(t, err)
	var out []operation
	for path, item := range c.Document().Paths.Map() {
		for method := range item.Operations() {
			out = append(out, operation{strings.ToUpper(method), openAPIParam.ReplaceAllString(path, ":$1")})
		}
	}
	return out
}

// Every route the API registers declares what it needs of its caller, and
// every operation of the OpenAPI document is a registered route that does.
func TestEveryRouteDeclaresItsRole(t *testing.T) {
	t.Parallel()
	e := echo.New()
	s := api.New(slog.New(slog.DiscardHandler), api.Config{}, nil, nil, nil, nil)
	s.Register(e)
	registered := map[operation]bool{}
	for _, r := range e.Routes() {
		if !strings.HasPrefix(r.Path, "/v1/") {
			continue
		}
		registered[operation{r.Method, r.Path}] = true
		_, _, _, ok := api.RouteNeed(s, r.Method, r.Path)
		require.True(t, ok, "%s %s declares no role", r.Method, r.Path)
	}
	for _, op := range documentedOperations(t) {
		if op.Path == "/openapi.json" {
			continue // public
		}
		require.True(t, registered[op], "%s %s is documented but not served", op.Method, op.Path)
	}
}

// Each role against every route of the OpenAPI document: below the
// route's role, 403 from the role check; at or above it, never 401 or
// 403 (the answer is the handler's: 404 for the unknown ids used here,
// 400 for the empty bodies). Merchants' keys get 403 on operator routes.
func TestRolesAgainstEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	tokens := map[access.Role]string{}
	for _, r := range access.Roles() {
		out := b.mustCreate(t, "/v1/tokens", adminToken, map[string]any{"name": r.String(), "role": r.String(), "service": true})
		tokens[r] = out["token"].(string)
	}
	const missing = "999999999"
	for _, op := range documentedOperations(t) {
		if op.Path == "/openapi.json" {
			continue
		}
		role, merchant, carrier, ok := api.RouteNeed(b.Server, op.Method, op.Path)
		require.True(t, ok, "%s %s", op.Method, op.Path)
		path := strings.ReplaceAll(op.Path, ":id", missing)
		var body any
		if op.Method == http.MethodPost || op.Method == http.MethodPatch {
			body = []byte(`{}`)
		}
		if op.Path == "/v1/endpoints/:id/events" {
			path += "?wait=0s"
		}
		t.Run(op.Method+" "+op.Path, func(t *testing.T) {
			// The answer's status, and its body to explain a failure (not
			// decoded: the audit log's export is JSON lines).
			call := func(t *testing.T, method, path, token string, body any) (int, string) {
				resp := b.do(t, method, path, token, body)
				defer resp.Body.Close()
				raw, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
				require.NoError(t, err)
				return resp.StatusCode, string(raw)
			}
			for _, r := range access.Roles() {
				st, out := call(t, op.Method, path, tokens[r], body)
				if role == access.RoleNone || !r.Allows(role) {
					require.Equal(t, http.StatusForbidden, st, "%s: %v", r, out)
					continue
				}
				require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, st, "%s: %v", r, out)
			}
			st, out := call(t, op.Method, path, w.M1Key, body)
			if merchant {
				require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, st, "merchant: %v", out)
			} else {
				require.Equal(t, http.StatusForbidden, st, "merchant: %v", out)
			}
			if !carrier {
				st, out = call(t, op.Method, path, w.CarrierKey, body)
				require.Equal(t, http.StatusForbidden, st, "carrier: %v", out)
			}
		})
	}
}

func (b *bundle) token(t *testing.T, by string, body map[string]any) (id, token string) {
	t.Helper()
	out := b.mustCreate(t, "/v1/tokens", by, body)
	return out["id"].(string), out["token"].(string)
}

// A service token: revoked at once, expired at its time, its last use
// recorded; a token cannot make a token with more power than it has.
func TestTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	id, op := b.token(t, adminToken, map[string]any{"name": "ci", "role": "operator", "service": true})
	require.Regexp(t, `^hrt_`, op)

	st, out := b.call(t, http.MethodGet, "/v1/stats", op, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	st, out = b.call(t, http.MethodPost, "/v1/merchants", op, map[string]any{"name": "x"})
	require.Equal(t, http.StatusForbidden, st, "an operator is not an admin: %v", out)

	// Last use is recorded.
	st, out = b.call(t, http.MethodGet, "/v1/tokens", adminToken, nil)
	require.Equal(t, http.StatusOK, st)
	items := out["items"].([]any)
	require.Len(t, items, 1)
	require.NotNil(t, items[0].(map[string]any)["last_used_at"])
	require.NotContains(t, items[0], "token", "a token is shown once")

	// More power than it has: refused.
	st, out = b.call(t, http.MethodPost, "/v1/tokens", op, map[string]any{"name": "up", "role": "admin", "service": true})
	require.Equal(t, http.StatusForbidden, st, "%v", out)
	st, out = b.call(t, http.MethodPost, "/v1/tokens", op, map[string]any{"name": "svc", "role": "viewer", "service": true})
	require.Equal(t, http.StatusForbidden, st, "only owners make service tokens: %v", out)

	// Revoked: at once.
	st, _ = b.call(t, http.MethodDelete, "/v1/tokens/"+id, adminToken, nil)
	require.Equal(t, http.StatusNoContent, st)
	st, out = b.call(t, http.MethodGet, "/v1/stats", op, nil)
	require.Equal(t, http.StatusUnauthorized, st, "%v", out)

	// Expired: refused from its time on.
	_, short := b.token(t, adminToken, map[string]any{"name": "short", "role": "viewer", "service": true,
		"expires_at": time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)})
	st, _ = b.call(t, http.MethodGet, "/v1/stats", short, nil)
	require.Equal(t, http.StatusOK, st)
	require.Eventually(t, func() bool {
		st, _ := b.call(t, http.MethodGet, "/v1/stats", short, nil)
		return st == http.StatusUnauthorized
	}, 10*time.Second, 100*time.Millisecond)
}

// A scope of merchants limits a token to their endpoints; of carriers, to
// those carriers.
func TestTokenScope(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	var m1, c1 int64
	_, err := fmt.Sscan(w.M1, &m1)
	require.NoError(t, err)
	_, err = fmt.Sscan(w.CarrierID, &c1)
	require.NoError(t, err)
	_, tok := b.token(t, adminToken, map[string]any{"name": "m1", "role": "admin", "service": true,
		"scope": map[string]any{"merchants": []int64{m1}, "carriers": []int64{c1 + 1000}}})

	st, out := b.call(t, http.MethodGet, "/v1/endpoints", tok, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	items := out["items"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, w.E1, items[0].(map[string]any)["id"])
	st, _ = b.call(t, http.MethodGet, "/v1/endpoints/"+w.E1, tok, nil)
	require.Equal(t, http.StatusOK, st)
	st, _ = b.call(t, http.MethodGet, "/v1/endpoints/"+w.E2, tok, nil)
	require.Equal(t, http.StatusNotFound, st, "another merchant's endpoint")
	st, _ = b.call(t, http.MethodPost, "/v1/endpoints/"+w.E2+"/disable", tok, map[string]any{})
	require.Equal(t, http.StatusNotFound, st)
	st, _ = b.call(t, http.MethodGet, "/v1/carriers/"+w.CarrierID, tok, nil)
	require.Equal(t, http.StatusNotFound, st, "a carrier out of scope")
	st, out = b.call(t, http.MethodGet, "/v1/carriers", tok, nil)
	require.Equal(t, http.StatusOK, st)
	require.Empty(t, out["items"])
	st, out = b.call(t, http.MethodGet, "/v1/merchants?limit=1", tok, nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, out["items"], 1)
	require.Equal(t, w.M1, out["items"].([]any)[0].(map[string]any)["id"])
	st, _ = b.call(t, http.MethodPost, "/v1/merchants/"+w.M2+"/portal-links", tok, map[string]any{})
	require.Equal(t, http.StatusNotFound, st, "a merchant out of scope")

	// A token made by a scoped token stays within its scope.
	st, out = b.call(t, http.MethodPost, "/v1/tokens", tok, map[string]any{"name": "wider", "role": "viewer",
		"scope": map[string]any{"merchants": []int64{m1, m1 + 1}}})
	require.Equal(t, http.StatusForbidden, st, "%v", out)
}
