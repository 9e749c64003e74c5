package web

import (
	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/access"
)

// PageNeed returns what route method path (echo's form) declares it needs:
// public, a merchant's session, or an operator's role; ok is false for a
// route without a declaration.
func PageNeed(d *Dashboard, method, path string) (role access.Role, merchant, public, ok bool) {
	n, ok := d.needs[method+" "+path]
	return n.role, n.merchant, n.public, ok
}

// StartSSOSession is startSSOSession, for tests.
func StartSSOSession(d *Dashboard, c echo.Context, email, name string, role access.Role) error {
	return d.startSSOSession(c, email, name, role)
}

// PageRoutes lists the routes that declare an operator's role, as
// "METHOD /path".
func PageRoutes(d *Dashboard) []string {
	var out []string
	for k, n := range d.needs {
		if n.role != access.RoleNone {
			out = append(out, k)
		}
	}
	return out
}
