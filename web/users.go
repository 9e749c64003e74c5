package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/throttle"
)

// totpIssuer names the service in authenticator apps.
const totpIssuer = "hookrelay"

var errBadPassword = hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "unknown email or wrong password or code")

// dummyHash is checked against when no user has the email, so that an
// unknown email takes as long as a wrong password (made at the first
// login, not at start-up: a hash costs 19 MiB and tens of milliseconds).
var dummyHash = sync.OnceValue(func() string { return access.HashPassword("no user has this password") })

// passwordUser returns the active password user of email whose password
// (and TOTP code, when enrolled) are right, else errBadPassword.
func (d *Dashboard) passwordUser(ctx context.Context, email, password, code string) (db.User, error) {
	u, err := d.store.UserByEmail(ctx, strings.TrimSpace(email))
	if err != nil {
		if hookrelay.CodeOf(err) != hookrelay.ENOTFOUND {
			return db.User{}, err
		}
		access.CheckPassword(dummyHash(), password)
		return db.User{}, errBadPassword
	}
	if !access.CheckPassword(u.PasswordHash, password) || !u.Active() || u.AuthSource != db.AuthPassword {
		return db.User{}, errBadPassword
	}
	if u.TOTPSecret != "" {
		step, ok := access.TOTPStep(u.TOTPSecret, code, d.cfg.Now())
		if !ok {
			return db.User{}, errBadPassword
		}
		// A code works once: one seen by someone else is no use to them.
		first, err := d.store.UserTOTPUse(ctx, u.ID, step)
		if err != nil {
			return db.User{}, err
		}
		if !first {
			return db.User{}, errBadPassword
		}
	}
	return u, nil
}

// startSession opens a dashboard session of user u (active) and answers
// with a redirect to the overview.
func (d *Dashboard) startSession(c echo.Context, u db.User) error {
	if err := d.openSession(c, u); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/")
}

// openSession opens a dashboard session of user u (active), records the
// login and sets the session's cookie on c's answer.
func (d *Dashboard) openSession(c echo.Context, u db.User) error {
	ctx := c.Request().Context()
	cookie, cl, err := d.sessions.open(ctx, u, clientOf(c))
	if err != nil {
		return err
	}
	if err := d.recordLogin(ctx, sessionPrincipal(c, cl), nil); err != nil {
		_ = d.sessions.end(ctx, cl)
		return err
	}
	_ = d.store.UserLoggedIn(ctx, u.ID, d.cfg.Now()) // only the users page reads it
	c.SetCookie(cookie)
	c.SetCookie(d.sessions.clear(loginCookie))
	return nil
}

// startSSOSession starts a dashboard session for an identity a single
// sign-on provider vouched for: the active user of email, or a new one
// (auth source sso) with role, made just in time. A deactivated user is
// refused (403). It sets the session's cookie; the caller answers.
func (d *Dashboard) startSSOSession(c echo.Context, email, name string, role access.Role) error {
	ctx := c.Request().Context()
	addr, err := ops.NormalizeEmail(email)
	if err != nil {
		return err
	}
	u, err := d.store.UserByEmail(ctx, addr)
	switch {
	case hookrelay.CodeOf(err) == hookrelay.ENOTFOUND:
		if role == access.RoleNone {
			return hookrelay.Errorf(hookrelay.EFORBIDDEN, "Your identity provider gives you no role here.")
		}
		u, err = d.store.UserCreate(ctx, db.NewUser{Email: addr, Name: name, Role: role, AuthSource: db.AuthSSO, Now: d.cfg.Now()})
		switch {
		case hookrelay.CodeOf(err) == hookrelay.ECONFLICT:
			u, err = d.store.UserByEmail(ctx, addr) // made meanwhile by another sign-in
		case err == nil:
			err = d.recordUserCreated(c, u)
		}
		if err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if !u.Active() {
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "Your account is deactivated; ask an owner.")
	}
	return d.openSession(c, u)
}

// inviteForm shows an invitation's page: the name and password to set,
// and an optional TOTP enrolment (a fresh secret with its otpauth URI).
func (d *Dashboard) inviteForm(c echo.Context) error {
	return d.renderInvite(c, http.StatusOK, c.QueryParam("token"), access.NewTOTPSecret(), "")
}

func (d *Dashboard) renderInvite(c echo.Context, status int, token, secret, msg string) error {
	inv, err := d.store.UserInviteGet(c.Request().Context(), ops.PortalTokenHash(token), d.cfg.Now())
	if err != nil {
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			return hookrelay.Errorf(hookrelay.ENOTFOUND, "This invitation is unknown, expired or used already. Ask an owner for a new one.")
		}
		return err
	}
	csrf := randomToken(18)
	c.SetCookie(d.sessions.cookie(loginCookie, csrf, 30*time.Minute))
	data := map[string]any{"LoginCSRF": csrf, "Token": token, "Email": inv.Email, "Role": inv.Role.String(),
		"Secret": secret, "URI": access.TOTPURI(totpIssuer, inv.Email, secret), "MinPassword": access.MinPasswordLength}
	if msg != "" {
		data["Error"] = msg
	}
	return d.render(c, status, "invite", view{Title: "Accept the invitation", Data: data})
}

// inviteAccept creates the invited user (single use) and opens a session.
func (d *Dashboard) inviteAccept(c echo.Context) error {
	ck, err := c.Cookie(loginCookie)
	if err != nil || ck.Value == "" || ck.Value != c.FormValue("csrf") {
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "The form expired; reload it and try again.")
	}
	token, secret := c.FormValue("token"), c.FormValue("totp_secret")
	name, password, code := strings.TrimSpace(c.FormValue("name")), c.FormValue("password"), strings.TrimSpace(c.FormValue("code"))
	if len(password) < access.MinPasswordLength {
		return d.renderInvite(c, http.StatusBadRequest, token, secret, fmt.Sprintf("The password needs at least %d characters.", access.MinPasswordLength))
	}
	if err := hookrelay.CheckText("name", name, ops.MaxUserName); err != nil {
		return d.renderInvite(c, http.StatusBadRequest, token, secret, "The name is too long or not valid text.")
	}
	enrol, step := "", int64(0)
	if code != "" {
		var ok bool
		if step, ok = access.TOTPStep(secret, code, d.cfg.Now()); !ok {
			return d.renderInvite(c, http.StatusBadRequest, token, secret, "That code does not match: check your authenticator app's clock, or leave the code empty to skip.")
		}
		enrol = secret
	}
	u, err := d.store.UserInviteAccept(c.Request().Context(), ops.PortalTokenHash(token), db.NewUser{
		Name: name, PasswordHash: access.HashPassword(password), TOTPSecret: enrol, AuthSource: db.AuthPassword, Now: d.cfg.Now(),
	})
	if err != nil {
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			return hookrelay.Errorf(hookrelay.ENOTFOUND, "This invitation is unknown, expired or used already. Ask an owner for a new one.")
		}
		return err
	}
	if err := d.recordUserCreated(c, u); err != nil {
		return err
	}
	if enrol != "" {
		// The code of the enrolment does not log in again.
		if _, err := d.store.UserTOTPUse(c.Request().Context(), u.ID, step); err != nil {
			return err
		}
	}
	return d.startSession(c, u)
}

// userLogin is the login with an email and password (and a TOTP code when
// enrolled); failures count against the address like a wrong token.
func (d *Dashboard) userLogin(c echo.Context, addr string) error {
	u, err := d.passwordUser(c.Request().Context(), c.FormValue("email"), c.FormValue("password"), c.FormValue("code"))
	if err != nil {
		if hookrelay.HTTPStatus(err) == http.StatusUnauthorized {
			d.throttle.Failed(throttle.SurfaceDashboard, addr)
			d.recordLoginFailed(c, err)
			return d.renderLogin(c, http.StatusUnauthorized, "Unknown email, or a wrong password or code.")
		}
		return err
	}
	return d.startSession(c, u)
}

type usersData struct {
	Rows      []db.User
	Roles     []access.Role
	InviteURL string
	// ResetURL is a password reset link just made, for ResetEmail.
	ResetURL   string
	ResetEmail string
	Self       int64
}

func (d *Dashboard) users(c echo.Context) error {
	rows, err := d.cfg.Ops.Users(c.Request().Context(), d.principal(c), 0, 1000)
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "users", view{Title: "Users", Nav: "users",
		Data: usersData{Rows: rows, Roles: access.Roles(), Self: session(c).UserID}})
}

// userInvite makes an invitation and shows its link, once.
func (d *Dashboard) userInvite(c echo.Context) error {
	role, err := access.ParseRole(c.FormValue("role"))
	if err != nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "Pick a role.")
	}
	ctx := c.Request().Context()
	inv, err := d.cfg.Ops.InviteUser(ctx, d.principal(c), ops.InviteInput{Email: c.FormValue("email"), Role: role})
	if err != nil {
		return err
	}
	rows, err := d.cfg.Ops.Users(ctx, d.principal(c), 0, 1000)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: c.Scheme(), Host: c.Request().Host, Path: ops.InvitePath, RawQuery: url.Values{"token": {inv.Token}}.Encode()}
	return d.render(c, http.StatusOK, "users", view{Title: "Users", Nav: "users",
		Data: usersData{Rows: rows, Roles: access.Roles(), InviteURL: u.String(), Self: session(c).UserID}})
}

func (d *Dashboard) userRole(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	role, err := access.ParseRole(c.FormValue("role"))
	if err != nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "Pick a role.")
	}
	if _, err := d.cfg.Ops.UpdateUser(c.Request().Context(), d.principal(c), id, ops.UserPatch{Role: &role}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/users?done=user-saved")
}

func (d *Dashboard) userDeactivate(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.DeactivateUser(c.Request().Context(), d.principal(c), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/users?done=user-deactivated")
}

func (d *Dashboard) userReactivate(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.ReactivateUser(c.Request().Context(), d.principal(c), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/users?done=user-reactivated")
}

type tokensData struct {
	Rows    []db.APIToken
	Roles   []access.Role
	Created *ops.NewToken
}

func (d *Dashboard) renderTokens(c echo.Context, created *ops.NewToken) error {
	rows, err := d.cfg.Ops.Tokens(c.Request().Context(), d.principal(c), 0, 1000)
	if err != nil {
		return err
	}
	var roles []access.Role
	for _, r := range access.Roles() {
		if session(c).Role.Allows(r) {
			roles = append(roles, r)
		}
	}
	return d.render(c, http.StatusOK, "tokens", view{Title: "API tokens", Nav: "tokens",
		Data: tokensData{Rows: rows, Roles: roles, Created: created}})
}

func (d *Dashboard) tokens(c echo.Context) error { return d.renderTokens(c, nil) }

// tokenCreate creates a token and shows it, once.
func (d *Dashboard) tokenCreate(c echo.Context) error {
	role, err := access.ParseRole(c.FormValue("role"))
	if err != nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "Pick a role.")
	}
	in := ops.TokenInput{Name: c.FormValue("name"), Role: role, Service: c.FormValue("service") != ""}
	if raw := c.FormValue("expires_days"); raw != "" {
		days, err := strconv.Atoi(raw)
		if err != nil || days < 1 || days > 731 {
			return hookrelay.Errorf(hookrelay.EINVALID, "The expiry is a number of days between 1 and 731.")
		}
		at := d.cfg.Now().Add(time.Duration(days) * 24 * time.Hour).UTC().Truncate(time.Second)
		in.ExpiresAt = &at
	}
	t, err := d.cfg.Ops.CreateToken(c.Request().Context(), d.principal(c), in)
	if err != nil {
		return err
	}
	return d.renderTokens(c, &t)
}

func (d *Dashboard) tokenRevoke(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := d.cfg.Ops.RevokeToken(c.Request().Context(), d.principal(c), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/tokens?done=token-revoked")
}

// principal is the request's principal (authed put it in its context).
func (d *Dashboard) principal(c echo.Context) access.Principal {
	p, _ := access.FromContext(c.Request().Context())
	return p
}
