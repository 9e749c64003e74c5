package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// samplesShown is how many stored callbacks the test pane offers.
const samplesShown = 20

// adaptersPage is a carrier's adapter page: its versions, the editor with
// its test pane, and a dry run's results.
type adaptersPage struct {
	Carrier  db.Carrier
	Versions []db.CarrierAdapter
	Samples  []db.StoredCallback
	// Source and Note are the editor's; Body and MessageID the test pane's
	// sample; Test what the source made of it.
	Source    string
	Note      string
	Body      string
	MessageID int64
	Test      *ops.AdapterRun
	// DryRun is the result of a dry run of one version.
	DryRun      *ops.DryRun
	ActionError string
}

func (d *Dashboard) renderAdapters(c echo.Context, status int, p adaptersPage) error {
	ctx := c.Request().Context()
	l, err := d.cfg.Ops.CarrierAdapters(ctx, p.Carrier.ID)
	if err != nil {
		return err
	}
	p.Carrier, p.Versions = l.Carrier, l.Versions
	if p.Samples, err = d.cfg.Ops.StoredSamples(ctx, p.Carrier.ID, samplesShown); err != nil {
		return err
	}
	if p.Source == "" && len(p.Versions) > 0 {
		// The editor starts from the newest version.
		a, err := d.cfg.Ops.CarrierAdapter(ctx, p.Carrier.ID, p.Versions[0].Version)
		if err != nil {
			return err
		}
		p.Source = a.Source
	}
	return d.render(c, status, "adapters", view{Title: "Adapters of " + p.Carrier.Name, Nav: "carriers", Data: p})
}

// carrierAdapters shows a carrier's adapter page.
func (d *Dashboard) carrierAdapters(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	p := adaptersPage{Carrier: car}
	if v, _ := strconv.Atoi(c.QueryParam("edit")); v > 0 {
		a, err := d.cfg.Ops.CarrierAdapter(c.Request().Context(), car.ID, v)
		if err != nil {
			return err
		}
		p.Source = a.Source
	}
	return d.renderAdapters(c, http.StatusOK, p)
}

// adapterForm reads the editor and the test pane of a post.
func adapterForm(c echo.Context, car db.Carrier) adaptersPage {
	p := adaptersPage{Carrier: car, Source: c.FormValue("source"), Note: c.FormValue("note"), Body: c.FormValue("body")}
	p.MessageID, _ = strconv.ParseInt(c.FormValue("message_id"), 10, 64)
	return p
}

// carrierAdapterSave stores the editor's source as a new version.
func (d *Dashboard) carrierAdapterSave(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	p := adapterForm(c, car)
	a, err := d.cfg.Ops.CreateAdapter(c.Request().Context(), car.ID, ops.NewAdapter{Source: p.Source, Note: p.Note})
	if hookrelay.CodeOf(err) == hookrelay.EINVALID {
		p.ActionError = hookrelay.ErrorMessage(err)
		return d.renderAdapters(c, http.StatusBadRequest, p)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/carriers/%d/adapters?done=adapter-saved&n=%d", car.ID, a.Version))
}

// carrierAdapterTest runs the editor's source on the test pane's sample:
// a pasted body, or a stored callback picked from the list.
func (d *Dashboard) carrierAdapterTest(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	p := adapterForm(c, car)
	in := ops.AdapterTest{Source: p.Source, MessageID: p.MessageID}
	if p.MessageID == 0 {
		if strings.TrimSpace(p.Body) == "" {
			p.ActionError = "paste a callback body or pick a stored callback"
			return d.renderAdapters(c, http.StatusBadRequest, p)
		}
		in.Body = []byte(p.Body)
	}
	res, err := d.cfg.Ops.TestAdapter(c.Request().Context(), car.ID, in)
	if err != nil {
		return err
	}
	p.Test = &res
	return d.renderAdapters(c, http.StatusOK, p)
}

// adapterVersionParam reads :version.
func adapterVersionParam(c echo.Context) (int, error) {
	v, err := strconv.Atoi(c.Param("version"))
	if err != nil || v <= 0 {
		return 0, hookrelay.Errorf(hookrelay.ENOTFOUND, "adapter version not found")
	}
	return v, nil
}

// carrierAdapterDryRun runs one version over the carrier's last stored
// callbacks and shows the results.
func (d *Dashboard) carrierAdapterDryRun(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	v, err := adapterVersionParam(c)
	if err != nil {
		return err
	}
	limit, _ := strconv.Atoi(c.FormValue("limit"))
	res, err := d.cfg.Ops.DryRunAdapter(c.Request().Context(), car.ID, v, limit)
	if hookrelay.CodeOf(err) == hookrelay.EINVALID {
		return d.renderAdapters(c, http.StatusBadRequest, adaptersPage{Carrier: car, ActionError: hookrelay.ErrorMessage(err)})
	}
	if err != nil {
		return err
	}
	return d.renderAdapters(c, http.StatusOK, adaptersPage{Carrier: car, DryRun: &res})
}

// carrierAdapterActivate makes a version active (0: none).
func (d *Dashboard) carrierAdapterActivate(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	v := 0
	if c.Param("version") != "" {
		if v, err = adapterVersionParam(c); err != nil {
			return err
		}
	}
	if _, err := d.cfg.Ops.ActivateAdapter(c.Request().Context(), car.ID, v); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/carriers/%d/adapters?done=adapter-activated&n=%d", car.ID, v))
}

// carrierAdapterOnFailure sets what a callback the adapter fails on becomes.
func (d *Dashboard) carrierAdapterOnFailure(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.SetAdapterOnFailure(c.Request().Context(), car.ID, c.FormValue("on_failure")); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/carriers/%d/adapters?done=carrier-saved", car.ID))
}
