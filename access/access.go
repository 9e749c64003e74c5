// Package access says who is acting and what they may do: the principal a
// request authenticated as (carried in its context, so the operations and
// the audit log see the same one the route checked), and the roles in order
// of power. A route declares the least role it needs; a principal with that
// role or a stronger one passes.
package access

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Role is an operator's power. Each role may do everything the roles below
// it may.
type Role uint8

const (
	// RoleNone is no operator role: merchants, portal sessions and
	// carriers, whose rights are their own (their merchant's endpoints,
	// their callbacks).
	RoleNone Role = iota
	// Viewer sees counts and health, never a message body.
	Viewer
	// Support searches and reads messages with their bodies.
	Support
	// Operator retries, replays, discards, enables and disables.
	Operator
	// Admin manages carriers, merchants, endpoints and keys.
	Admin
	// Owner manages users, tokens and settings.
	Owner
)

var roleNames = [...]string{RoleNone: "", Viewer: "viewer", Support: "support", Operator: "operator", Admin: "admin", Owner: "owner"}

// Roles lists the operator roles, weakest first.
func Roles() []Role { return []Role{Viewer, Support, Operator, Admin, Owner} }

// String returns the role's name ("" for RoleNone).
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", r)
}

// ParseRole returns the role named s (case-insensitive).
func ParseRole(s string) (Role, error) {
	for _, r := range Roles() {
		if strings.EqualFold(s, roleNames[r]) {
			return r, nil
		}
	}
	return RoleNone, fmt.Errorf("unknown role %q (one of viewer, support, operator, admin, owner)", s)
}

// Allows reports whether r may do what need may.
func (r Role) Allows(need Role) bool { return need != RoleNone && r >= need }

// Kind is how a principal authenticated.
type Kind string

const (
	// KindBreakGlass is the HOOKRELAY_ADMIN_TOKEN: the bootstrap and
	// break-glass credential, an owner.
	KindBreakGlass Kind = "break_glass"
	// KindUser is a user's dashboard session (password or single sign-on).
	KindUser Kind = "user"
	// KindToken is an API token of a user or a service.
	KindToken Kind = "token"
	// KindMerchant is a merchant's API key.
	KindMerchant Kind = "merchant"
	// KindPortal is a merchant portal session.
	KindPortal Kind = "portal"
	// KindCarrier is a carrier's API key.
	KindCarrier Kind = "carrier"
	// KindSystem is the service itself or its command line on the host.
	KindSystem Kind = "system"
)

// Scope limits an operator to some carriers or merchants. An empty list
// limits nothing.
type Scope struct {
	Carriers  []int64 `json:"carriers,omitempty"`
	Merchants []int64 `json:"merchants,omitempty"`
}

// Principal is who acts: how they authenticated, their role and scope, and
// where the request came from.
type Principal struct {
	Kind       Kind
	Role       Role
	Scope      Scope
	UserID     int64 // KindUser, and KindToken of a user
	TokenID    int64 // KindToken
	SessionID  int64 // KindUser and KindPortal: the dashboard session
	MerchantID int64 // KindMerchant, KindPortal
	CarrierID  int64 // KindCarrier
	// Name names the principal for people: a user's email, a token's name,
	// a merchant's or carrier's name.
	Name      string
	Addr      string // the client address
	UserAgent string
}

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal ctx carries, if any.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// AllowsMerchant reports whether the scope lets its holder see merchant id.
func (s Scope) AllowsMerchant(id int64) bool {
	return len(s.Merchants) == 0 || slices.Contains(s.Merchants, id)
}

// AllowsCarrier reports whether the scope lets its holder see carrier id.
func (s Scope) AllowsCarrier(id int64) bool {
	return len(s.Carriers) == 0 || slices.Contains(s.Carriers, id)
}

// Empty reports whether the scope limits nothing.
func (s Scope) Empty() bool { return len(s.Carriers) == 0 && len(s.Merchants) == 0 }

// Within reports whether s limits at least as much as outer: each of outer's
// lists that limits something holds every id of s's same list, which limits
// too.
func (s Scope) Within(outer Scope) bool {
	within := func(in, out []int64) bool {
		if len(out) == 0 {
			return true
		}
		if len(in) == 0 {
			return false
		}
		for _, id := range in {
			if !slices.Contains(out, id) {
				return false
			}
		}
		return true
	}
	return within(s.Carriers, outer.Carriers) && within(s.Merchants, outer.Merchants)
}

// Operator reports whether p acts with an operator role (a user, a token or
// the break-glass token), rather than as a merchant, portal or carrier.
func (p Principal) Operator() bool { return p.Role != RoleNone }
