package web

import (
	"bufio"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// maxCarriersListed bounds the carriers page (a platform has hundreds).
const maxCarriersListed = 1000

// refusalsShown is how many refusals a carrier's page shows.
const refusalsShown = 50

// carrierRow is a carrier on the carriers page with its health.
type carrierRow struct {
	db.Carrier
	Health *ops.CarrierHealth
}

// reasonCount is a refusal reason with its count.
type reasonCount struct {
	Reason string
	Count  int64
}

// RefusedByReason returns the refusals per reason, most first.
func (r carrierRow) RefusedByReason() []reasonCount {
	return byReason(r.Health)
}

func byReason(h *ops.CarrierHealth) []reasonCount {
	if h == nil {
		return nil
	}
	out := make([]reasonCount, 0, len(h.Refused))
	for reason, n := range h.Refused {
		out = append(out, reasonCount{reason, n})
	}
	slices.SortFunc(out, func(a, b reasonCount) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return out
}

// carriers lists the carriers with their health over the last hour.
func (d *Dashboard) carriers(c echo.Context) error {
	ctx := c.Request().Context()
	all, err := d.cfg.Ops.Carriers(ctx, 0, maxCarriersListed)
	if err != nil {
		return err
	}
	health, err := d.cfg.Ops.CarrierHealth(ctx, nil)
	if err != nil {
		return err
	}
	rows := make([]carrierRow, len(all))
	for i, car := range all {
		rows[i] = carrierRow{Carrier: car, Health: health[car.ID]}
	}
	return d.render(c, http.StatusOK, "carriers", view{Title: "Carriers", Nav: "carriers", Refresh: true, Data: struct {
		Rows    []carrierRow
		Unknown *ops.CarrierHealth // refusals of keys that named no carrier
	}{rows, health[0]}})
}

// tryForm is the "try a sample" form and what the sample became.
type tryForm struct {
	Body    string
	Headers string
	Result  *ops.TryResult
}

type carrierPage struct {
	Carrier  db.Carrier
	Health   *ops.CarrierHealth
	Reasons  []hookrelay.Reason
	Reason   string // the refusals' filter
	Refusals []db.CarrierRefusal
	Try      tryForm
	// Rotation is the new key of a rotation, shown on this page only.
	Rotation *ops.CarrierKeyRotation
	// Overlap is the rotation form's overlap; ActionError why an action
	// of the page was refused.
	Overlap     string
	ActionError string
}

// Sig describes the carrier's signature declaration.
func (p carrierPage) Sig() signatureView { return signatureOf(p.Carrier.Signature) }

// Status is "active" or "disabled".
func (p carrierPage) Status() string { return ops.CarrierStatus(p.Carrier) }

// Sig describes the carrier's signature declaration.
func (r carrierRow) Sig() signatureView { return signatureOf(r.Signature) }

// Status is "active" or "disabled".
func (r carrierRow) Status() string { return ops.CarrierStatus(r.Carrier) }

// ByReason returns the carrier's refusals per reason, most first.
func (p carrierPage) ByReason() []reasonCount { return byReason(p.Health) }

// carrierOf returns carrier :id (not deleted), or hookrelay.ENOTFOUND.
func (d *Dashboard) carrierOf(c echo.Context) (db.Carrier, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return db.Carrier{}, err
	}
	return d.cfg.Ops.Carrier(c.Request().Context(), id)
}

func (d *Dashboard) renderCarrier(c echo.Context, status int, car db.Carrier, try tryForm) error {
	return d.renderCarrierPage(c, status, carrierPage{Carrier: car, Try: try})
}

// renderCarrierPage renders p, with its health and refusals read.
func (d *Dashboard) renderCarrierPage(c echo.Context, status int, p carrierPage) error {
	ctx := c.Request().Context()
	car := p.Carrier
	p.Reasons, p.Reason = hookrelay.Reasons, c.QueryParam("reason")
	if p.Overlap == "" {
		p.Overlap = defaultCarrierOverlap
	}
	var err error
	if p.Health, err = d.cfg.Ops.CarrierHealthOf(ctx, car.ID); err != nil {
		return err
	}
	if p.Refusals, err = d.cfg.Ops.CarrierRefusals(ctx, ops.RefusalQuery{CarrierID: car.ID, Reason: hookrelay.Reason(p.Reason), Limit: refusalsShown}); err != nil {
		return err
	}
	return d.render(c, status, "carrier", view{Title: "Carrier " + car.Name, Nav: "carriers", Data: p})
}

// carrier shows a carrier: its configuration, health, recent refusals
// (filtered by ?reason=) and the form that tries a sample.
func (d *Dashboard) carrier(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	return d.renderCarrier(c, http.StatusOK, car, tryForm{})
}

// carrierTry answers the "try a sample" form on the carrier's page:
// what hookrelay would do with the sample (ops.Service.TryCallback).
func (d *Dashboard) carrierTry(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "bad form")
	}
	f := tryForm{Body: form.Get("body"), Headers: form.Get("headers")}
	res, err := d.cfg.Ops.TryCallback(c.Request().Context(), car.ID, ops.Sample{Header: parseHeaderLines(f.Headers), Body: []byte(f.Body)})
	if err != nil {
		return err
	}
	f.Result = &res
	return d.renderCarrier(c, http.StatusOK, car, f)
}

// parseHeaderLines reads "Name: value" lines; others are ignored.
func parseHeaderLines(s string) http.Header {
	h := http.Header{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if name = strings.TrimSpace(name); ok && name != "" {
			h.Set(name, strings.TrimSpace(value))
		}
	}
	return h
}
