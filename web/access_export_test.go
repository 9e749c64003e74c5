package web

import "github.com/hookrelay/hookrelay/access"

// PageNeed returns what route method path (echo's form) declares it needs:
// public, a merchant's session, or an operator's role; ok is false for a
// route without a declaration.
func PageNeed(d *Dashboard, method, path string) (role access.Role, merchant, public, ok bool) {
	n, ok := d.needs[method+" "+path]
	return n.role, n.merchant, n.public, ok
}
