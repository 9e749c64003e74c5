package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkAuthByKind is the cost of an operator request's authentication
// and role check, by credential, on a route whose handler answers at once
// (GET /v1/replays/{id} of an unknown replay: one indexed read): the admin
// token (cached hash), a user's or service's API token (one indexed read
// of the token with its user), a merchant key (one indexed read).
func BenchmarkAuthByKind(b *testing.B) {
	bd := setup(b, privateOK())
	st, out := bd.call(b, http.MethodPost, "/v1/tokens", adminToken, map[string]any{"name": "bench", "role": "operator", "service": true})
	if st != http.StatusCreated {
		b.Fatalf("token: %d %v", st, out)
	}
	token := out["token"].(string)
	st, out = bd.call(b, http.MethodPost, "/v1/merchants", adminToken, map[string]any{"name": "bench"})
	if st != http.StatusCreated {
		b.Fatalf("merchant: %d %v", st, out)
	}
	mkey := out["api_key"].(string)
	for _, c := range []struct{ name, token string }{{"admin", adminToken}, {"token", token}, {"merchant", mkey}} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/replays/999999", nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			for b.Loop() {
				rec := httptest.NewRecorder()
				bd.Handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusNotFound {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
