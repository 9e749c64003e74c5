package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/access"
)

// BenchmarkRoleCheck is the role check alone (need.admits) for a scoped
// operator on a carrier's route: what every operator request pays on top
// of its authentication.
func BenchmarkRoleCheck(b *testing.B) {
	e := echo.New()
	c := e.NewContext(httptest.NewRequest(http.MethodPost, "/v1/carriers/7/enable", nil), httptest.NewRecorder())
	c.SetPath("/v1/carriers/:id/enable")
	c.SetParamNames("id")
	c.SetParamValues("7")
	p := access.Principal{Kind: access.KindToken, Role: access.Operator, Scope: access.Scope{Carriers: []int64{3, 7}}}
	n := need{role: access.Operator}
	for b.Loop() {
		if err := n.admits(c, p); err != nil {
			b.Fatal(err)
		}
	}
}
