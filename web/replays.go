package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// replayDefaultWindow is the window the replay form proposes: the last day.
const replayDefaultWindow = 24 * time.Hour

// replayForm is the replay form as the browser sends it: since and until
// are datetime-local values, taken as UTC.
type replayForm struct {
	Since, Until, Status, OrderingKey string
	Errors                            fieldErrors
}

// fieldErrors are a form's errors by field name; "" is the form's own.
type fieldErrors map[string]string

// place files err under the field its message starts with, or under the
// form: the operations layer names the field first in its messages.
func (fe fieldErrors) place(err error, fields ...string) {
	msg := hookrelay.ErrorMessage(err)
	for _, f := range fields {
		if strings.HasPrefix(msg, f) {
			fe[f] = msg
			return
		}
	}
	fe[""] = msg
}

func replayFormFrom(c echo.Context) replayForm {
	return replayForm{
		Since:       strings.TrimSpace(c.FormValue("since")),
		Until:       strings.TrimSpace(c.FormValue("until")),
		Status:      c.FormValue("status"),
		OrderingKey: strings.TrimSpace(c.FormValue("ordering_key")),
		Errors:      fieldErrors{},
	}
}

// parseInputTime reads a datetime-local value as UTC (with or without
// seconds: browsers send them when the step asks for them).
func parseInputTime(s string) (time.Time, bool) {
	for _, layout := range []string{timeInput, timeInput + ":05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// request checks what the form itself can (each field's format) and returns
// the request, or false with the errors filed.
func (f *replayForm) request() (ops.ReplayRequest, bool) {
	req := ops.ReplayRequest{Status: f.Status, OrderingKey: f.OrderingKey}
	var ok bool
	if req.Since, ok = parseInputTime(f.Since); !ok {
		f.Errors["since"] = "since: want a date and time like 2026-11-29T10:00 (UTC)"
	}
	if req.Until, ok = parseInputTime(f.Until); !ok {
		f.Errors["until"] = "until: want a date and time like 2026-11-29T10:00 (UTC)"
	}
	switch f.Status {
	case db.ReplayDelivered, db.ReplayFailed, db.ReplayAll:
	default:
		f.Errors["status"] = "status must be delivered, failed or all"
	}
	return req, len(f.Errors) == 0
}

// check files an error of the operations layer under its field.
func (f *replayForm) check(err error) {
	msg := hookrelay.ErrorMessage(err)
	switch {
	case strings.HasPrefix(msg, "the window"), strings.HasPrefix(msg, "since must be before until"):
		f.Errors["until"] = msg
	default:
		f.Errors.place(err, "status", "ordering_key", "since", "until")
	}
}

// replayScope is who replays, from the session: the operator (base "/ui")
// or a merchant, its own endpoints only (base "/ui/m").
type replayScope struct {
	Actor ops.Actor
	Base  string
	Nav   string
}

func scopeOf(c echo.Context) replayScope {
	if id := session(c).MerchantID; id != 0 {
		return replayScope{Actor: ops.Merchant(id), Base: "/ui/m", Nav: "m"}
	}
	p, _ := access.FromContext(c.Request().Context())
	return replayScope{Actor: ops.FromPrincipal(p), Base: "/ui", Nav: "endpoints"}
}

// replayEndpoint loads the endpoint of the route as the session may see it.
func (d *Dashboard) replayEndpoint(c echo.Context, sc replayScope) (db.Endpoint, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return db.Endpoint{}, err
	}
	return d.cfg.Ops.Endpoint(c.Request().Context(), sc.Actor, id)
}

// recentReplays is how many of an endpoint's replays its replay form lists.
const recentReplays = 10

type replayFormData struct {
	E      db.Endpoint
	Form   replayForm
	Base   string
	Count  int64       // the confirmation's
	Recent []db.Replay // the endpoint's latest replays, newest first (the form's)
}

func (d *Dashboard) renderReplayForm(c echo.Context, status int, sc replayScope, data replayFormData) error {
	return d.render(c, status, "replayform", view{Title: fmt.Sprintf("Replay to endpoint %d", data.E.ID), Nav: sc.Nav, Data: data})
}

// replayFormPage shows the replay form of an endpoint, proposing the last day.
func (d *Dashboard) replayFormPage(c echo.Context) error {
	sc := scopeOf(c)
	ep, err := d.replayEndpoint(c, sc)
	if err != nil {
		return err
	}
	// The inputs have minutes: until is the next minute (after now means
	// now), so that the last minute's deliveries are in the window.
	until := d.cfg.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	f := replayForm{Since: until.Add(-replayDefaultWindow).Format(timeInput), Until: until.Format(timeInput), Status: db.ReplayDelivered}
	recent, err := d.cfg.Ops.EndpointReplays(c.Request().Context(), sc.Actor, ep.ID, recentReplays)
	if err != nil {
		return err
	}
	return d.renderReplayForm(c, http.StatusOK, sc, replayFormData{E: ep, Form: f, Base: sc.Base, Recent: recent})
}

// replayConfirm counts what the form's replay would re-deliver and asks
// for confirmation; a form with errors comes back with them.
func (d *Dashboard) replayConfirm(c echo.Context) error {
	sc := scopeOf(c)
	ep, err := d.replayEndpoint(c, sc)
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	data := replayFormData{E: ep, Form: replayFormFrom(c), Base: sc.Base}
	req, ok := data.Form.request()
	if ok {
		data.Count, err = o.CountReplay(c.Request().Context(), sc.Actor, ep.ID, req)
		if hookrelay.CodeOf(err) == hookrelay.EINVALID {
			data.Form.check(err)
		} else if err != nil {
			return err
		}
	}
	if len(data.Form.Errors) > 0 {
		return d.renderReplayForm(c, http.StatusUnprocessableEntity, sc, data)
	}
	return d.render(c, http.StatusOK, "replayconfirm", view{Title: "Confirm replay", Nav: sc.Nav, Data: data})
}

// replayStart starts the confirmed replay and shows its progress.
func (d *Dashboard) replayStart(c echo.Context) error {
	sc := scopeOf(c)
	ep, err := d.replayEndpoint(c, sc)
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	data := replayFormData{E: ep, Form: replayFormFrom(c), Base: sc.Base}
	req, ok := data.Form.request()
	if ok {
		rp, err := o.StartReplay(c.Request().Context(), sc.Actor, ep.ID, req)
		if err == nil {
			return c.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/replays/%d", sc.Base, rp.ID))
		}
		if hookrelay.CodeOf(err) != hookrelay.EINVALID {
			return err
		}
		data.Form.check(err)
	}
	return d.renderReplayForm(c, http.StatusUnprocessableEntity, sc, data)
}

type replayData struct {
	R        db.Replay
	Base     string
	Finished int64 // done + failed: the rows handled so far
}

func (d *Dashboard) loadReplay(ctx context.Context, c echo.Context, sc replayScope) (db.Replay, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return db.Replay{}, err
	}
	return d.cfg.Ops.Replay(ctx, sc.Actor, id)
}

// replayPage shows a replay's progress; it refreshes itself while running.
func (d *Dashboard) replayPage(c echo.Context) error {
	sc := scopeOf(c)
	rp, err := d.loadReplay(c.Request().Context(), c, sc)
	if err != nil {
		return err
	}
	data := replayData{R: rp, Base: sc.Base, Finished: rp.Done + rp.Failed}
	return d.render(c, http.StatusOK, "replay", view{Title: fmt.Sprintf("Replay %d", rp.ID), Nav: sc.Nav,
		Refresh: rp.State == db.ReplayRunning, Data: data})
}

// replayCancel stops a running replay.
func (d *Dashboard) replayCancel(c echo.Context) error {
	sc := scopeOf(c)
	ctx := c.Request().Context()
	rp, err := d.loadReplay(ctx, c, sc)
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.CancelReplay(ctx, sc.Actor, rp.ID); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/replays/%d?done=cancelled", sc.Base, rp.ID))
}
