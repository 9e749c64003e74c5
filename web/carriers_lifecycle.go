package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// defaultCarrierOverlap is the rotation form's overlap: how long the
// replaced key keeps working.
const defaultCarrierOverlap = "24h"

// signatureView is a carrier's signature declaration as the pages show
// it: never its secret.
type signatureView struct {
	Signed    bool
	Scheme    string
	Where     string // "the X-Signature header"
	Expect    string // "sha256=<hex HMAC-SHA256 of the body>"
	Timestamp string // "X-Timestamp within 5m0s", when a timestamp is checked
}

func signatureOf(s hookrelay.InboundSignature) signatureView {
	if !s.Signed() {
		return signatureView{Scheme: hookrelay.InboundNone}
	}
	v := signatureView{Signed: true, Scheme: s.Scheme, Where: s.Where(), Expect: s.Expect()}
	ts := s.TimestampHeader
	if s.Scheme == hookrelay.InboundStandardWebhooks {
		ts = "webhook-timestamp"
	}
	if ts != "" {
		tol := s.Tolerance
		if tol <= 0 {
			tol = hookrelay.DefaultInboundTolerance
		}
		v.Timestamp = fmt.Sprintf("%s within %s", ts, tol)
	}
	return v
}

// carrierEnable and carrierDisable set whether the carrier's callbacks are
// taken.
func (d *Dashboard) carrierEnable(c echo.Context) error  { return d.carrierSetEnabled(c, true) }
func (d *Dashboard) carrierDisable(c echo.Context) error { return d.carrierSetEnabled(c, false) }

func (d *Dashboard) carrierSetEnabled(c echo.Context, enabled bool) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := d.cfg.Ops.SetCarrierEnabled(c.Request().Context(), id, enabled); err != nil {
		return err
	}
	done := "carrier-disabled"
	if enabled {
		done = "carrier-enabled"
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/carriers/%d?done=%s", id, done))
}

// carrierRotateKey gives the carrier a new key and shows it, on this
// answer only.
func (d *Dashboard) carrierRotateKey(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	p := carrierPage{Carrier: car, Overlap: strings.TrimSpace(c.FormValue("overlap"))}
	overlap, err := time.ParseDuration(p.Overlap)
	if err != nil {
		p.ActionError = fmt.Sprintf("overlap %q is not a duration such as 24h, 30m or 0s", p.Overlap)
		return d.renderCarrierPage(c, http.StatusBadRequest, p)
	}
	rot, err := d.cfg.Ops.RotateCarrierKey(c.Request().Context(), car.ID, overlap)
	if hookrelay.CodeOf(err) == hookrelay.EINVALID {
		p.ActionError = hookrelay.ErrorMessage(err)
		return d.renderCarrierPage(c, http.StatusBadRequest, p)
	}
	if err != nil {
		return err
	}
	if p.Carrier, err = d.cfg.Ops.Carrier(c.Request().Context(), car.ID); err != nil {
		return err
	}
	p.Rotation = &rot
	return d.renderCarrierPage(c, http.StatusOK, p)
}

// carrierForm is the carrier's edit form.
type carrierForm struct {
	ID               int64
	Name             string
	OrderingKeyField string
	EventTypeField   string
	MerchantField    string
	RateLimitPerSec  string
	AllowedCIDRs     string // one a line
	Signature        string // the declaration's JSON, without the secret
	Errors           fieldErrors
}

// carrierFields are the form's fields as the operations name them in
// their errors.
var carrierFields = []string{"name", "ordering_key_field", "event_type_field", "merchant_field", "rate_limit_per_sec", "allowed_cidrs", "signature"}

func carrierFormOf(car db.Carrier) carrierForm {
	f := carrierForm{ID: car.ID, Name: car.Name, OrderingKeyField: car.OrderingKeyField, EventTypeField: car.EventTypeField,
		MerchantField: car.MerchantField, RateLimitPerSec: strconv.Itoa(car.RateLimitPerSec), Errors: fieldErrors{}}
	cidrs := make([]string, len(car.AllowedCIDRs))
	for i, p := range car.AllowedCIDRs {
		cidrs[i] = p.String()
	}
	f.AllowedCIDRs = strings.Join(cidrs, "\n")
	if b, err := json.MarshalIndent(car.Signature, "", "  "); err == nil {
		f.Signature = string(b)
	}
	return f
}

func (d *Dashboard) renderCarrierForm(c echo.Context, status int, f carrierForm) error {
	return d.render(c, status, "carrieredit", view{Title: "Edit carrier " + f.Name, Nav: "carriers", Data: f})
}

// carrierEditForm shows the carrier's edit form.
func (d *Dashboard) carrierEditForm(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	return d.renderCarrierForm(c, http.StatusOK, carrierFormOf(car))
}

// carrierUpdate applies the edit form (ops.Service.UpdateCarrier checks
// it); a refusal shows the form again with the field at fault.
func (d *Dashboard) carrierUpdate(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	f := carrierForm{ID: car.ID, Name: c.FormValue("name"), OrderingKeyField: strings.TrimSpace(c.FormValue("ordering_key_field")),
		EventTypeField: strings.TrimSpace(c.FormValue("event_type_field")), MerchantField: strings.TrimSpace(c.FormValue("merchant_field")),
		RateLimitPerSec: strings.TrimSpace(c.FormValue("rate_limit_per_sec")), AllowedCIDRs: c.FormValue("allowed_cidrs"),
		Signature: c.FormValue("signature"), Errors: fieldErrors{}}
	in := ops.CarrierUpdate{Name: &f.Name, OrderingKeyField: &f.OrderingKeyField, EventTypeField: &f.EventTypeField, MerchantField: &f.MerchantField}
	rate := 0
	if f.RateLimitPerSec != "" {
		if rate, err = strconv.Atoi(f.RateLimitPerSec); err != nil {
			f.Errors["rate_limit_per_sec"] = "rate_limit_per_sec must be a whole number of callbacks a second (0: unlimited)"
		}
	}
	in.RateLimitPerSec = &rate
	cidrs := lines(f.AllowedCIDRs)
	in.AllowedCIDRs = &cidrs
	if strings.TrimSpace(f.Signature) != "" {
		var sig hookrelay.InboundSignature
		if err := json.Unmarshal([]byte(f.Signature), &sig); err != nil {
			f.Errors["signature"] = strings.TrimPrefix(err.Error(), "json: ")
			if !strings.HasPrefix(f.Errors["signature"], "signature") {
				f.Errors["signature"] = "signature: " + f.Errors["signature"]
			}
		}
		if secret := c.FormValue("signature_secret"); secret != "" {
			sig.Secret = secret
		}
		in.Signature = &sig
	}
	if len(f.Errors) > 0 {
		return d.renderCarrierForm(c, http.StatusBadRequest, f)
	}
	if _, err := d.cfg.Ops.UpdateCarrier(c.Request().Context(), car.ID, in); err != nil {
		if code := hookrelay.CodeOf(err); code != hookrelay.EINVALID && code != hookrelay.ECONFLICT {
			return err
		}
		f.Errors.place(err, carrierFields...)
		return d.renderCarrierForm(c, http.StatusBadRequest, f)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/carriers/%d?done=carrier-saved", car.ID))
}

// lines returns the non-blank lines of s, trimmed.
func lines(s string) []string {
	out := []string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// carrierDeletion is the delete confirmation: Undelivered is set when the
// deletion was refused for the callbacks still being delivered.
type carrierDeletion struct {
	Carrier     db.Carrier
	Refused     string
	Undelivered int64
}

// carrierDeleteConfirm asks before deleting.
func (d *Dashboard) carrierDeleteConfirm(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "carrierdelete", view{Title: "Delete carrier " + car.Name, Nav: "carriers", Data: carrierDeletion{Carrier: car}})
}

// carrierDelete deletes the carrier; while callbacks it sent are
// undelivered only with force, and the page says how many there are.
func (d *Dashboard) carrierDelete(c echo.Context) error {
	car, err := d.carrierOf(c)
	if err != nil {
		return err
	}
	force := c.FormValue("force") == "true"
	n, err := d.cfg.Ops.DeleteCarrier(c.Request().Context(), car.ID, force)
	if hookrelay.CodeOf(err) == hookrelay.ECONFLICT {
		return d.render(c, http.StatusConflict, "carrierdelete", view{Title: "Delete carrier " + car.Name, Nav: "carriers",
			Data: carrierDeletion{Carrier: car, Refused: hookrelay.ErrorMessage(err), Undelivered: n}})
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/carriers?done=carrier-deleted&n=%d", n))
}
