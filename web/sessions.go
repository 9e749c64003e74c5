package web

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
)

// sessionsPerPage is how many sessions the operator's list shows at once.
const sessionsPerPage = 100

type sessionsData struct {
	Rows      []db.LoginSessionRecord
	Current   int64 // the session viewing the page
	NextAfter int64 // the id the next page starts below; 0 on the last page
}

// sessionList shows the live dashboard sessions, newest first, each with a
// revoke button (a plain form: it works without JavaScript).
func (d *Dashboard) sessionList(c echo.Context) error {
	o := d.cfg.Ops
	var err error
	var before int64
	if raw := c.QueryParam("before"); raw != "" {
		if before, err = strconv.ParseInt(raw, 10, 64); err != nil || before < 0 {
			before = 0
		}
	}
	rows, err := o.Sessions(c.Request().Context(), before, sessionsPerPage+1)
	if err != nil {
		return err
	}
	data := sessionsData{Rows: rows, Current: session(c).ID}
	if len(rows) > sessionsPerPage {
		data.Rows = rows[:sessionsPerPage]
		data.NextAfter = data.Rows[sessionsPerPage-1].ID
	}
	return d.render(c, http.StatusOK, "sessions", view{Title: "Sessions", Nav: "sessions", Data: data})
}

// sessionRevoke ends a session at once; revoking one's own is a logout.
func (d *Dashboard) sessionRevoke(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	if err := o.RevokeSession(c.Request().Context(), id); err != nil {
		return err
	}
	if id == session(c).ID {
		c.SetCookie(d.sessions.clear(sessionCookie))
		return c.Redirect(http.StatusSeeOther, "/ui/login")
	}
	return c.Redirect(http.StatusSeeOther, "/ui/sessions?done=revoked")
}
