package api

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
)

// need is what a route asks of its caller: the least operator role, and
// whether a merchant's key (acting on its own objects only) or a carrier's
// key may call it. Every route declares one (Register); auth checks it.
type need struct {
	role     access.Role // RoleNone: no operator may call it
	merchant bool
	carrier  bool
}

// orMerchant is n that a merchant's key may call too.
func (n need) orMerchant() need { n.merchant = true; return n }

// String describes n, for the route table's documentation and tests.
func (n need) String() string {
	var parts []string
	if n.role != access.RoleNone {
		parts = append(parts, n.role.String())
	}
	if n.merchant {
		parts = append(parts, "merchant key")
	}
	if n.carrier {
		parts = append(parts, "carrier key")
	}
	return strings.Join(parts, " or ")
}

// admits checks principal p against n: its kind, its role, and its scope
// where the path names a carrier or a merchant (:id of /v1/carriers/ and
// /v1/merchants/ routes). Only memory: no database read.
func (n need) admits(c echo.Context, p access.Principal) error {
	switch p.Kind {
	case access.KindMerchant, access.KindPortal:
		if !n.merchant {
			return errWrongKey
		}
		return nil
	case access.KindCarrier:
		if !n.carrier {
			return errWrongKey
		}
		return nil
	}
	if n.role == access.RoleNone {
		return errWrongKey
	}
	if !p.Role.Allows(n.role) {
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "the role %s may not use this endpoint (it needs %s)", p.Role, n.role)
	}
	if p.Scope.Empty() {
		return nil
	}
	path := c.Path()
	if strings.HasPrefix(path, "/v1/carriers/:id") && len(p.Scope.Carriers) > 0 {
		if id, err := strconv.ParseInt(c.Param("id"), 10, 64); err == nil && !p.Scope.AllowsCarrier(id) {
			return hookrelay.Errorf(hookrelay.ENOTFOUND, "carrier not found")
		}
	}
	if strings.HasPrefix(path, "/v1/merchants/:id") && len(p.Scope.Merchants) > 0 {
		if id, err := strconv.ParseInt(c.Param("id"), 10, 64); err == nil && !p.Scope.AllowsMerchant(id) {
			return hookrelay.Errorf(hookrelay.ENOTFOUND, "merchant not found")
		}
	}
	return nil
}

// routeKey names a route in the table of needs.
func routeKey(method, path string) string { return fmt.Sprintf("%s %s", method, path) }

// listScoped lists up to limit rows after afterID through fetch (by id),
// keeping those keep admits: a scoped principal's pages hold only what
// its scope lets it see, and as many as asked while there are more.
func listScoped[T any](fetch func(afterID int64, limit int) ([]T, error), id func(T) int64, keep func(int64) bool, afterID int64, limit int) ([]T, error) {
	var out []T
	for {
		rows, err := fetch(afterID, limit)
		if err != nil || len(rows) == 0 {
			return out, err
		}
		for _, r := range rows {
			if keep(id(r)) {
				out = append(out, r)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		afterID = id(rows[len(rows)-1])
		if len(rows) < limit {
			return out, nil
		}
	}
}
