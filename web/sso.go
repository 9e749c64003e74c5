package web

import (
	"cmp"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/sso"
)

// ssoLogin starts a single sign-on: a redirect to the identity provider.
// ?next= is the dashboard page to come back to (a path of this site).
func (d *Dashboard) ssoLogin(c echo.Context) error {
	return d.sso.Begin(c.Response(), c.Request(), c.QueryParam("next"))
}

// ssoCallback finishes a single sign-on and starts the user's session
// (startSSOSession). The browser then goes on by a page that navigates
// within this site (sso.Continue), not by a redirect: a redirect chain that
// began at the provider is cross-site, and the SameSite=Strict session
// cookie would not reach the next page.
func (d *Dashboard) ssoCallback(c echo.Context) error {
	id, returnTo, err := d.sso.Finish(c.Response(), c.Request())
	if err == nil {
		err = d.startSSOSession(c, id.Email, id.Name, id.Role)
	}
	if err != nil {
		d.log.Info("single sign-on refused", "email", id.Email, "subject", id.Subject, "error", err)
		d.recordLoginFailed(c, err)
		return d.renderLogin(c, hookrelay.HTTPStatus(err), hookrelay.ErrorMessage(err))
	}
	sso.Continue(c.Response(), cmp.Or(returnTo, "/ui/"))
	return nil
}
