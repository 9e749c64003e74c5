package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// The portal's endpoint actions: create, edit, enable, disable, delete and
// the deliveries list. Each goes through the operations layer as the
// merchant (ops.Actor), so another merchant's endpoint is "not found".

type endpointFormData struct {
	E      *db.Endpoint // nil: a new endpoint
	Form   formView
	Action string
}

func (d *Dashboard) actor(c echo.Context) ops.Actor { return ops.Merchant(session(c).MerchantID) }

func (d *Dashboard) renderEndpointForm(c echo.Context, status int, ep *db.Endpoint, vals map[string][]string, errs fieldErrors) error {
	ch, err := d.choices(c.Request().Context(), session(c).MerchantID)
	if err != nil {
		return err
	}
	if vals == nil {
		vals = map[string][]string{}
		if ep != nil {
			vals = endpointValues(*ep, ch)
		}
	}
	data := endpointFormData{E: ep, Form: buildForm(ch, vals, errs, ep), Action: "/ui/m/endpoints"}
	title := "New endpoint"
	if ep != nil {
		data.Action = fmt.Sprintf("/ui/m/endpoints/%d", ep.ID)
		title = fmt.Sprintf("Edit endpoint %d", ep.ID)
	}
	return d.render(c, status, "mendpointform", view{Title: title, Nav: "m", Data: data})
}

// formFailed shows the form again with err next to its field, or returns
// err when it is not a refused field (a missing endpoint, a failure).
func (d *Dashboard) formFailed(c echo.Context, ep *db.Endpoint, err error) error {
	if hookrelay.CodeOf(err) != hookrelay.EINVALID {
		return err
	}
	errs := fieldErrors{ops.FieldOf(err): hookrelay.ErrorMessage(err)}
	return d.renderEndpointForm(c, http.StatusBadRequest, ep, postedForm(c), errs)
}

func (d *Dashboard) endpointNewForm(c echo.Context) error {
	return d.renderEndpointForm(c, http.StatusOK, nil, nil, fieldErrors{})
}

func (d *Dashboard) endpointCreate(c echo.Context) error {
	a := d.actor(c)
	in, err := formInput(c, nil)
	if err != nil {
		return d.formFailed(c, nil, err)
	}
	created, err := d.cfg.Ops.CreateEndpoint(c.Request().Context(), a, a.MerchantID, in)
	if err != nil {
		return d.formFailed(c, nil, err)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/m/endpoints/%d?done=created", created.Endpoint.ID))
}

func (d *Dashboard) endpointEditForm(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	return d.renderEndpointForm(c, http.StatusOK, &ep, nil, fieldErrors{})
}

func (d *Dashboard) endpointUpdate(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	in, err := formInput(c, &ep)
	if err != nil {
		return d.formFailed(c, &ep, err)
	}
	if _, err := d.cfg.Ops.UpdateEndpoint(c.Request().Context(), d.actor(c), ep.ID, in); err != nil {
		return d.formFailed(c, &ep, err)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/m/endpoints/%d?done=saved", ep.ID))
}

func (d *Dashboard) merchantEnable(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.EnableEndpoint(c.Request().Context(), d.actor(c), ep.ID); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/m/endpoints/%d?done=enabled", ep.ID))
}

func (d *Dashboard) merchantDisable(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.DisableEndpoint(c.Request().Context(), d.actor(c), ep.ID, "disabled in the portal"); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/m/endpoints/%d?done=disabled", ep.ID))
}

func (d *Dashboard) endpointDeleteConfirm(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "mdelete", view{Title: fmt.Sprintf("Delete endpoint %d", ep.ID), Nav: "m", Data: ep})
}

func (d *Dashboard) endpointDelete(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.DeleteEndpoint(c.Request().Context(), d.actor(c), ep.ID); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/m/?done=deleted")
}

// deliveriesPerPage is how many deliveries the portal lists at once.
const deliveriesPerPage = 50

type deliveriesData struct {
	E      db.Endpoint
	Status string
	Rows   []db.Delivery
	// NextID and NextAt start the next page; NextID is 0 on the last.
	NextID int64
	NextAt string
}

// merchantDeliveries lists an endpoint's deliveries in one state (pending,
// delivered or dead), a page at a time; each links to its attempts.
func (d *Dashboard) merchantDeliveries(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	status := c.QueryParam("status")
	if status == "" {
		status = db.DeliveryPending
	}
	id, _ := strconv.ParseInt(c.QueryParam("id"), 10, 64)
	var at time.Time
	if raw := c.QueryParam("at"); raw != "" {
		if at, err = time.Parse(time.RFC3339Nano, raw); err != nil {
			return hookrelay.Errorf(hookrelay.EINVALID, "at: want an RFC 3339 time")
		}
	}
	rows, err := d.cfg.Ops.Deliveries(c.Request().Context(), ep, ops.DeliveryPage{Status: status, At: at, ID: id, Limit: deliveriesPerPage + 1})
	if err != nil {
		return err
	}
	data := deliveriesData{E: ep, Status: status, Rows: rows}
	if len(rows) > deliveriesPerPage {
		data.Rows = rows[:deliveriesPerPage]
		last := data.Rows[deliveriesPerPage-1]
		data.NextID, data.NextAt = last.ID, last.At.UTC().Format(time.RFC3339Nano)
	}
	return d.render(c, http.StatusOK, "mdeliveries", view{Title: fmt.Sprintf("Deliveries of endpoint %d", ep.ID), Nav: "m", Data: data})
}
