package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// opsEndpointForm is the create form as the browser sends it.
type opsEndpointForm struct {
	URL         string
	Events      []string
	Description string
	Errors      fieldErrors
}

// Ticked reports whether event type ev is ticked on the form.
func (f opsEndpointForm) Ticked(ev string) bool { return slices.Contains(f.Events, ev) }

type opsEndpointsData struct {
	Rows       []db.OpsEndpoint
	EventTypes []string
	Form       opsEndpointForm
	Created    *db.OpsEndpoint // just created: its secret is shown this once
}

func (d *Dashboard) renderOpsEndpoints(c echo.Context, status int, data opsEndpointsData) error {
	var err error
	if data.Rows, err = d.cfg.Ops.OpsEndpoints(c.Request().Context()); err != nil {
		return err
	}
	data.EventTypes = hookrelay.OpsEventTypes
	return d.render(c, status, "opsendpoints", view{Title: "Operational webhooks", Nav: "opsendpoints", Data: data})
}

// opsEndpointList lists the operator's receivers of operational webhooks,
// with the form that adds one.
func (d *Dashboard) opsEndpointList(c echo.Context) error {
	return d.renderOpsEndpoints(c, http.StatusOK, opsEndpointsData{Form: opsEndpointForm{Errors: fieldErrors{}}})
}

// opsEndpointCreate adds one; the page shows its secret once, in the
// response to this POST (never in a URL).
func (d *Dashboard) opsEndpointCreate(c echo.Context) error {
	o := d.cfg.Ops
	form, err := c.FormParams()
	if err != nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "bad form")
	}
	f := opsEndpointForm{URL: strings.TrimSpace(form.Get("url")), Events: form["events"],
		Description: strings.TrimSpace(form.Get("description")), Errors: fieldErrors{}}
	created, err := o.CreateOpsEndpoint(c.Request().Context(), ops.NewOpsEndpoint{URL: f.URL, Events: f.Events, Description: f.Description})
	if err != nil {
		if hookrelay.CodeOf(err) != hookrelay.EINVALID {
			return err
		}
		if field := ops.FieldOf(err); field != "" {
			f.Errors[field] = hookrelay.ErrorMessage(err)
		} else {
			f.Errors.place(err, "events", "description")
		}
		return d.renderOpsEndpoints(c, http.StatusUnprocessableEntity, opsEndpointsData{Form: f})
	}
	return d.renderOpsEndpoints(c, http.StatusCreated, opsEndpointsData{Form: opsEndpointForm{Errors: fieldErrors{}}, Created: &created})
}

// opsEndpoint finds ops endpoint :id on the list (there are few).
func (d *Dashboard) opsEndpoint(c echo.Context) (db.OpsEndpoint, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return db.OpsEndpoint{}, err
	}
	rows, err := d.cfg.Ops.OpsEndpoints(c.Request().Context())
	if err != nil {
		return db.OpsEndpoint{}, err
	}
	for _, r := range rows {
		if r.ID == id {
			return r, nil
		}
	}
	return db.OpsEndpoint{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "ops endpoint not found")
}

// opsEndpointDeleteConfirm asks before deleting.
func (d *Dashboard) opsEndpointDeleteConfirm(c echo.Context) error {
	oe, err := d.opsEndpoint(c)
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "opsdelete", view{Title: "Delete ops endpoint", Nav: "opsendpoints", Data: oe})
}

// opsEndpointDelete deletes the ops endpoint and what still waits for it.
func (d *Dashboard) opsEndpointDelete(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	if err := o.DeleteOpsEndpoint(c.Request().Context(), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/ops-endpoints?done=opsdeleted")
}
