package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/throttle"
)

// authed loads the session; without one, pages redirect to the login form
// and form posts get 401.
func (d *Dashboard) authed(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ck, err := c.Cookie(sessionCookie)
		if err == nil {
			cl, err := d.sessions.check(c.Request().Context(), ck.Value)
			if err == nil {
				c.Set("session", cl)
				c.SetRequest(c.Request().WithContext(access.WithPrincipal(c.Request().Context(), cl.principal(clientOf(c)))))
				return next(c)
			}
			if !errors.Is(err, errNoSession) {
				return err
			}
			c.SetCookie(d.sessions.clear(sessionCookie))
		}
		if c.Request().Method == http.MethodGet {
			return c.Redirect(http.StatusSeeOther, "/ui/login")
		}
		return hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "Log in first.")
	}
}

func session(c echo.Context) claims {
	cl, _ := c.Get("session").(claims)
	return cl
}

// requireRole refuses the ops pages to merchant sessions (403), except
// that the overview sends a merchant to the merchant view, and to
// operators whose role is below role (403).
func (d *Dashboard) requireRole(role access.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			cl := session(c)
			if cl.Role.Allows(role) {
				return next(c)
			}
			if !cl.Operator() {
				if c.Request().Method == http.MethodGet && c.Path() == "/ui/" {
					return c.Redirect(http.StatusSeeOther, "/ui/m/")
				}
				return hookrelay.Errorf(hookrelay.EFORBIDDEN, "This page is for operators.")
			}
			return hookrelay.Errorf(hookrelay.EFORBIDDEN, "Your role (%s) cannot do this; it needs %s.", cl.Role, role)
		}
	}
}

// merchantOnly refuses admin sessions on the merchant view (403).
func (d *Dashboard) merchantOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if session(c).Kind == kindMerchant {
			return next(c)
		}
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "This page is for merchants: log in with a merchant key.")
	}
}

// csrf checks the token of every state-changing request against the session.
func (d *Dashboard) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if !d.sessions.validCSRF(session(c), c.FormValue("csrf")) {
			return hookrelay.Errorf(hookrelay.EFORBIDDEN, "The form expired or did not come from this dashboard; reload the page and try again.")
		}
		return next(c)
	}
}

func (d *Dashboard) loginForm(c echo.Context) error {
	return d.renderLogin(c, http.StatusOK, "")
}

// renderLogin shows the login form with a fresh double-submit CSRF token and
// message msg (none when empty).
func (d *Dashboard) renderLogin(c echo.Context, status int, msg string) error {
	token := randomToken(18)
	c.SetCookie(d.sessions.cookie(loginCookie, token, 30*time.Minute))
	data := map[string]any{"LoginCSRF": token, "SSO": d.sso != nil}
	if msg != "" {
		data["Error"] = msg
	}
	return d.render(c, status, "login", view{Title: "Log in", Data: data})
}

// login opens a session. A client address with too many failed logins
// waits (throttle): 429 with Retry-After, whatever it sends meanwhile.
func (d *Dashboard) login(c echo.Context) error {
	ck, err := c.Cookie(loginCookie)
	if err != nil || ck.Value == "" || ck.Value != c.FormValue("csrf") {
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "The login form expired; reload it and try again.")
	}
	addr := throttle.ClientAddr(c.Request())
	if wait, _ := d.throttle.Wait(throttle.SurfaceDashboard, addr); wait > 0 {
		secs := int(math.Ceil(wait.Seconds()))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return d.renderLogin(c, http.StatusTooManyRequests,
			fmt.Sprintf("Too many failed logins from your address; try again in %d s.", secs))
	}
	if c.FormValue("email") != "" {
		return d.userLogin(c, addr)
	}
	cookie, cl, err := d.sessions.login(c.Request().Context(), c.FormValue("token"),
		client{Addr: addr, UserAgent: c.Request().UserAgent()})
	if err != nil {
		if hookrelay.HTTPStatus(err) == http.StatusUnauthorized {
			d.throttle.Failed(throttle.SurfaceDashboard, addr)
			d.recordLoginFailed(c, err)
			return d.renderLogin(c, http.StatusUnauthorized, "Unknown admin token or merchant key.")
		}
		return err
	}
	if err := d.recordLogin(c.Request().Context(), sessionPrincipal(c, cl), nil); err != nil {
		_ = d.sessions.end(c.Request().Context(), cl)
		return err
	}
	c.SetCookie(cookie)
	c.SetCookie(d.sessions.clear(loginCookie))
	if cl.Kind == kindMerchant {
		return c.Redirect(http.StatusSeeOther, "/ui/m/")
	}
	return c.Redirect(http.StatusSeeOther, "/ui/")
}

// logout ends the session: its row is revoked, so the cookie and its CSRF
// token stop working in every process at once.
func (d *Dashboard) logout(c echo.Context) error {
	cl := session(c)
	if err := d.recordLogout(c, cl, d.sessions.end(c.Request().Context(), cl)); err != nil {
		return err
	}
	c.SetCookie(d.sessions.clearSession(cl))
	if cl.Portal {
		// A portal session may live in an iframe, where the login form
		// (an operator page too) cannot show.
		return c.Redirect(http.StatusSeeOther, "/ui/portal/ended")
	}
	return c.Redirect(http.StatusSeeOther, "/ui/login")
}
