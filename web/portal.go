package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/throttle"
)

// The portal is the merchant's part of the dashboard: /ui/m (a merchant
// session's pages) and /ui/portal (opening a portal link, and the page a
// portal session ends on). Only these pages may be framed, by the origins
// of Config.PortalFrameAncestors.

// portalCSP is the portal pages' Content-Security-Policy: the dashboard's,
// with the frame ancestors allowed.
func portalCSP(ancestors []string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors " +
		strings.Join(ancestors, " ") + "; base-uri 'none'"
}

// portalFrame lets the allowed origins frame the page: it replaces the
// dashboard's frame-ancestors 'none' and drops X-Frame-Options (which
// cannot name origins). Without allowed origins it leaves them.
func (d *Dashboard) portalFrame(next echo.HandlerFunc) echo.HandlerFunc {
	if len(d.cfg.PortalFrameAncestors) == 0 {
		return next
	}
	csp := portalCSP(d.cfg.PortalFrameAncestors)
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Del("X-Frame-Options")
		return next(c)
	}
}

// writable refuses every action of a read-only session (403): it may only
// look. Reveal and test are refused too: a read-only view shows no secret
// and sends nothing.
func (d *Dashboard) writable(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if session(c).ReadOnly {
			return hookrelay.Errorf(hookrelay.EFORBIDDEN, "This portal session is read-only: it can look but not change anything.")
		}
		return next(c)
	}
}

// portalOpenForm is where a portal link lands. It does not use the link: a
// GET may come from a mail scanner or a link preview. Its one button posts
// the token (app.js presses it at once when scripts run).
func (d *Dashboard) portalOpenForm(c echo.Context) error {
	token := c.QueryParam("token")
	if token == "" || len(token) > 100 {
		return errBadLink
	}
	return d.render(c, http.StatusOK, "portalopen", view{Title: "Open the portal", Data: map[string]any{"Token": token}})
}

// portalOpen uses the link: it opens the merchant session (the link cannot
// open another) and goes to the portal. Mount puts sameOrigin before it: a
// post that no page of this dashboard sent is refused, so no page can log a
// visitor into a portal of its choosing (login CSRF).
func (d *Dashboard) portalOpen(c echo.Context) error {
	r := c.Request()
	addr := throttle.ClientAddr(r)
	if wait, _ := d.throttle.Wait(throttle.SurfaceDashboard, addr); wait > 0 {
		return hookrelay.Errorf(hookrelay.ERATELIMIT, "Too many failed attempts from your address; try again later.")
	}
	cookie, cl, err := d.sessions.redeem(r.Context(), c.FormValue("token"), client{Addr: addr, UserAgent: r.UserAgent()})
	if err != nil {
		if errors.Is(err, errBadLink) {
			d.throttle.Failed(throttle.SurfaceDashboard, addr)
			d.recordLoginFailed(c, err)
		}
		return err
	}
	if err := d.recordLogin(r.Context(), sessionPrincipal(c, cl), nil); err != nil {
		_ = d.sessions.end(r.Context(), cl)
		return err
	}
	c.SetCookie(cookie)
	return c.Redirect(http.StatusSeeOther, "/ui/m/")
}

// portalEnded is where a portal session's logout lands (a page that may be
// framed, unlike the login form).
func (d *Dashboard) portalEnded(c echo.Context) error {
	return d.render(c, http.StatusOK, "portalended", view{Title: "Logged out"})
}
