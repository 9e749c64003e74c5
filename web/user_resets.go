package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

var errResetUnknown = hookrelay.Errorf(hookrelay.ENOTFOUND, "This reset link is unknown, expired or used already. Ask an owner for a new one.")

var errResetRefused = hookrelay.Errorf(hookrelay.ECONFLICT, "This account is deactivated or signs in through single sign-on: a reset link does not apply. Ask an owner.")

// resetRefusal is errResetRefused for a user deactivated or turned to
// single sign-on since the link was made, else nil.
func resetRefusal(u db.User) error {
	if !u.Active() || u.AuthSource != db.AuthPassword {
		return errResetRefused
	}
	return nil
}

// userReset makes a password reset link for user id and shows it, once.
func (d *Dashboard) userReset(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	inv, err := d.cfg.Ops.ResetUser(ctx, d.principal(c), id)
	if err != nil {
		return err
	}
	rows, err := d.cfg.Ops.Users(ctx, d.principal(c), 0, 1000)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: c.Scheme(), Host: c.Request().Host, Path: ops.ResetPath, RawQuery: url.Values{"token": {inv.Token}}.Encode()}
	data := usersData{Rows: rows, Roles: access.Roles(), ResetURL: u.String(), Self: session(c).UserID}
	for _, r := range rows {
		if r.ID == id {
			data.ResetEmail = r.Email
		}
	}
	return d.render(c, http.StatusOK, "users", view{Title: "Users", Nav: "users", Data: data})
}

// resetForm shows a reset link's page: the new password to set, and an
// optional TOTP enrolment (a fresh secret with its otpauth URI).
func (d *Dashboard) resetForm(c echo.Context) error {
	return d.renderReset(c, http.StatusOK, c.QueryParam("token"), access.NewTOTPSecret(), "")
}

func (d *Dashboard) renderReset(c echo.Context, status int, token, secret, msg string) error {
	u, err := d.store.UserResetGet(c.Request().Context(), ops.PortalTokenHash(token), d.cfg.Now())
	if err != nil {
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			return errResetUnknown
		}
		return err
	}
	if err := resetRefusal(u); err != nil {
		return err
	}
	csrf := randomToken(18)
	c.SetCookie(d.sessions.cookie(loginCookie, csrf, 30*time.Minute))
	data := map[string]any{"LoginCSRF": csrf, "Token": token, "Email": u.Email, "HadTOTP": u.TOTPSecret != "",
		"Secret": secret, "URI": access.TOTPURI(totpIssuer, u.Email, secret), "MinPassword": access.MinPasswordLength}
	if msg != "" {
		data["Error"] = msg
	}
	return d.render(c, status, "reset", view{Title: "Set a new password", Data: data})
}

// resetAccept uses a reset link (single use): it sets the user's password
// and TOTP enrolment (none when the code is empty), ends every dashboard
// session of the user and opens a new one.
func (d *Dashboard) resetAccept(c echo.Context) error {
	ck, err := c.Cookie(loginCookie)
	if err != nil || ck.Value == "" || ck.Value != c.FormValue("csrf") {
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "The form expired; reload it and try again.")
	}
	token, secret := c.FormValue("token"), c.FormValue("totp_secret")
	password, code := c.FormValue("password"), strings.TrimSpace(c.FormValue("code"))
	if len(password) < access.MinPasswordLength {
		return d.renderReset(c, http.StatusBadRequest, token, secret, fmt.Sprintf("The password needs at least %d characters.", access.MinPasswordLength))
	}
	cred := db.UserCredentials{PasswordHash: access.HashPassword(password), Now: d.cfg.Now()}
	if code != "" {
		step, ok := access.TOTPStep(secret, code, d.cfg.Now())
		if !ok {
			return d.renderReset(c, http.StatusBadRequest, token, secret, "That code does not match: check your authenticator app's clock, or leave the code empty to sign in without one.")
		}
		cred.TOTPSecret, cred.TOTPStep = secret, step
	}
	u, err := d.store.UserResetAccept(c.Request().Context(), ops.PortalTokenHash(token), cred)
	switch hookrelay.CodeOf(err) {
	case "":
	case hookrelay.ENOTFOUND:
		return errResetUnknown
	case hookrelay.ECONFLICT:
		return errResetRefused
	default:
		return err
	}
	if err := d.recordPasswordReset(c, u); err != nil {
		return err
	}
	return d.startSession(c, u)
}

// recordPasswordReset records that user u set a new password with a reset
// link; the user is its own actor. "two_step" says whether TOTP is
// enrolled now (a name the audit log's redaction keeps).
func (d *Dashboard) recordPasswordReset(c echo.Context, u db.User) error {
	p := userPrincipal(c, u)
	return d.cfg.Ops.Record(c.Request().Context(), audit.Entry{Action: "user.password_reset", TargetType: "user",
		TargetID: audit.ID(u.ID), After: map[string]any{"two_step": u.TOTPSecret != "", "sessions_ended": true}, Actor: &p})
}
