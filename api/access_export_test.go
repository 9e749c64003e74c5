package api

import "github.com/hookrelay/hookrelay/access"

// RouteNeed returns what route method path (echo's form, ":id") declares
// it needs: the least operator role, and whether merchants' and
// carriers' keys may call it; ok is false for a route without one.
func RouteNeed(s *Server, method, path string) (role access.Role, merchant, carrier, ok bool) {
	n, ok := s.needs[routeKey(method, path)]
	return n.role, n.merchant, n.carrier, ok
}
