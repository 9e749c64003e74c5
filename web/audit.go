package web

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/throttle"
)

// Actions of the dashboard's sessions in the audit log.
const (
	actionLogin       = "login"
	actionLoginFailed = "login.failed"
	actionLogout      = "logout"
)

// sessionPrincipal is who a dashboard session of cl acts as, seen from c's
// client.
func sessionPrincipal(c echo.Context, cl claims) access.Principal {
	return cl.principal(clientOf(c))
}

// clientOf is the client of c's request.
func clientOf(c echo.Context) client {
	return client{Addr: throttle.ClientAddr(c.Request()), UserAgent: c.Request().UserAgent()}
}

// recordLogin records a login of p into session p.SessionID (err nil), or a
// failed one (err says why; p then names only the client). A login whose
// record cannot be written fails: the caller ends the session it opened.
func (d *Dashboard) recordLogin(ctx context.Context, p access.Principal, err error) error {
	action := actionLogin
	if err != nil {
		action = actionLoginFailed
	}
	return d.cfg.Ops.Record(ctx, audit.Entry{Action: action, TargetType: "session", TargetID: audit.ID(p.SessionID), Actor: &p}.Result(err))
}

// recordLoginFailed records a refused login from c's client.
func (d *Dashboard) recordLoginFailed(c echo.Context, err error) {
	from := clientOf(c)
	p := access.Principal{Kind: audit.KindAnonymous, Addr: from.Addr, UserAgent: from.UserAgent}
	if rerr := d.recordLogin(c.Request().Context(), p, err); rerr != nil {
		d.log.Error("audit log: a failed login is not recorded", "addr", p.Addr, "error", rerr)
	}
}

// recordLogout records the end of session cl.
func (d *Dashboard) recordLogout(c echo.Context, cl claims, err error) error {
	p := sessionPrincipal(c, cl)
	rerr := d.cfg.Ops.Record(c.Request().Context(), audit.Entry{Action: actionLogout, TargetType: "session",
		TargetID: audit.ID(cl.ID), Actor: &p}.Result(err))
	if err != nil {
		return err
	}
	return rerr
}

// recordUserCreated records that user u was created by accepting an
// invitation or by a first single sign-on; the user is its own actor.
func (d *Dashboard) recordUserCreated(c echo.Context, u db.User) error {
	p := userPrincipal(c, u)
	return d.cfg.Ops.Record(c.Request().Context(), audit.Entry{Action: "user.create", TargetType: "user",
		TargetID: audit.ID(u.ID), After: u, Actor: &p})
}

// userPrincipal is user u acting from c's client before a session of
// theirs exists (the audit log's actor of their own creation or reset).
func userPrincipal(c echo.Context, u db.User) access.Principal {
	from := clientOf(c)
	return access.Principal{Kind: access.KindUser, Role: u.Role, Scope: u.Scope, UserID: u.ID, Name: u.Email,
		Addr: from.Addr, UserAgent: from.UserAgent}
}
