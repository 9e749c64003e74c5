package web

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// The portal's endpoint form is this one definition: each entry is an input
// named after the API field it sets. Every rule about the values is the
// operations layer's (ops.ApplyEndpoint, the API's path too); the form only
// turns text into an ops.EndpointInput and shows an ops.FieldError next to
// the input of its name. A new endpoint field is one entry here.

// inputKind is how a field is entered.
type inputKind string

const (
	inputText     inputKind = "text"     // one line
	inputURL      inputKind = "url"      // one line, type=url
	inputTextarea inputKind = "textarea" // several lines
	inputNumber   inputKind = "number"   // a whole number; empty: unchanged or default
	inputSelect   inputKind = "select"   // one of Options
	inputChecks   inputKind = "checks"   // any of Options, plus free text when Other
	inputList     inputKind = "list"     // values separated by commas or spaces
	inputHeaders  inputKind = "headers"  // name/value rows (endpointform_headers_auth.go)
	inputAuth     inputKind = "auth"     // none, basic or bearer with write-only secrets
)

// formChoices are the pick lists the form offers.
type formChoices struct {
	Carriers   []db.Carrier
	EventTypes []string // seen on the merchant's endpoints
}

type formOption struct {
	Value, Label string
}

// formField is one input of the endpoint form.
type formField struct {
	Name     string // the API field (ops.FieldError.Field) and the input's name
	Label    string
	Hint     string
	Kind     inputKind
	Required bool
	// Other adds a text input (name Name+"_other") for values not offered.
	Other   bool
	Options func(ch formChoices) []formOption
	// Value is the endpoint's value as the form shows it.
	Value func(ep db.Endpoint, ch formChoices) []string
	// Set puts the posted values into the input.
	Set func(in *ops.EndpointInput, vals []string)

	// A composite field (headers, auth) reads several inputs instead: Params
	// names them, Current gives the endpoint's values by input name, and
	// Apply puts the posted ones into the input, given the endpoint edited
	// (nil when new: write-only values left empty keep its own); it may
	// refuse them with an *ops.FieldError.
	Params  []string
	Current func(ep db.Endpoint) map[string][]string
	Apply   func(in *ops.EndpointInput, vals map[string][]string, ep *db.Endpoint) error
}

func one(v string) []string { return []string{v} }

func first(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	return vals[0]
}

func strPtr(vals []string) *string {
	v := first(vals)
	return &v
}

// optional is the value given, nil when empty (unchanged, or the default).
func optional(vals []string) *string {
	if v := strings.TrimSpace(first(vals)); v != "" {
		return &v
	}
	return nil
}

func listPtr(vals []string) *[]string {
	out := []string{}
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return &out
}

// endpointForm is the endpoint form of the portal, in the order shown.
var endpointForm = []formField{
	{Name: "url", Label: "URL", Kind: inputURL, Required: true,
		Hint:  "Where deliveries are POSTed, https:// in production.",
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.URL) },
		Set:   func(in *ops.EndpointInput, v []string) { in.URL = strPtr(v) }},
	{Name: "description", Label: "Description", Kind: inputTextarea,
		Hint:  "For your own reference; up to 1000 characters.",
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.Description) },
		Set:   func(in *ops.EndpointInput, v []string) { in.Description = strPtr(v) }},
	{Name: "carriers", Label: "Carriers", Kind: inputChecks,
		Hint: "The carriers whose callbacks it receives; none ticked means every carrier.",
		Options: func(ch formChoices) []formOption {
			out := make([]formOption, len(ch.Carriers))
			for i, c := range ch.Carriers {
				out[i] = formOption{Value: c.Name, Label: c.Name}
			}
			return out
		},
		Value: func(ep db.Endpoint, ch formChoices) []string {
			var out []string
			for _, c := range ch.Carriers {
				if slices.Contains(ep.CarrierIDs, c.ID) {
					out = append(out, c.Name)
				}
			}
			return out
		},
		Set: func(in *ops.EndpointInput, v []string) { in.Carriers = listPtr(v) }},
	{Name: "event_types", Label: "Event types", Kind: inputChecks, Other: true,
		Hint: "The event types it receives; none means every type. Others: separate them with commas.",
		Options: func(ch formChoices) []formOption {
			out := make([]formOption, len(ch.EventTypes))
			for i, e := range ch.EventTypes {
				out[i] = formOption{Value: e, Label: e}
			}
			return out
		},
		Value: func(ep db.Endpoint, _ formChoices) []string { return ep.EventTypes },
		Set:   func(in *ops.EndpointInput, v []string) { in.EventTypes = listPtr(v) }},
	{Name: "payload_mode", Label: "Payload mode", Kind: inputSelect,
		Hint: "reference: large payloads come as a link to fetch instead of inline.",
		Options: func(formChoices) []formOption {
			return []formOption{{ops.PayloadInline, "inline (the callback's bytes)"}, {ops.PayloadReference, "reference (a link for large payloads)"}}
		},
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.PayloadMode) },
		Set:   func(in *ops.EndpointInput, v []string) { in.PayloadMode = optional(v) }},
	{Name: "format", Label: "Format", Kind: inputSelect,
		Hint: "raw: each carrier's callback as it came; canonical: one event shape for every carrier (tracking.updated), made by the carrier's adapter — callbacks without one are not sent.",
		Options: func(formChoices) []formOption {
			return []formOption{{db.FormatRaw, "raw (the carrier's callback)"}, {db.FormatCanonical, "canonical (the event)"}}
		},
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.Format) },
		Set:   func(in *ops.EndpointInput, v []string) { in.Format = optional(v) }},
	{Name: "ordering", Label: "Ordering", Kind: inputSelect,
		Hint: "key: callbacks of one tracking number arrive in order, one at a time; none: in any order, in parallel.",
		Options: func(formChoices) []formOption {
			return []formOption{{db.OrderingKey, "key (in order per tracking number)"}, {db.OrderingNone, "none (any order)"}}
		},
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.Ordering) },
		Set:   func(in *ops.EndpointInput, v []string) { in.Ordering = optional(v) }},
	{Name: "filter", Label: "Filter", Kind: inputText,
		Hint:  `Deliver only the callbacks that match, such as status == "DELIVERED" && weight > 2; empty for every callback.`,
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.Filter) },
		Set: func(in *ops.EndpointInput, v []string) {
			f := strings.TrimSpace(first(v))
			in.Filter = &f
		}},
	headersField,
	authField,
	{Name: "signature", Label: "Signature", Kind: inputSelect,
		Hint: "hmac: receivers verify with a shared secret (v1); ed25519: with a public key (v1a), so they hold nothing that could forge a delivery. A change makes a new key; the old one keeps signing for 24 hours.",
		Options: func(formChoices) []formOption {
			return []formOption{{hookrelay.SignatureHMAC, "hmac (v1, shared secret)"}, {hookrelay.SignatureEd25519, "ed25519 (v1a, public key)"}}
		},
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.Signature) },
		Set:   func(in *ops.EndpointInput, v []string) { in.Signature = optional(v) }},
	{Name: "retry_schedule", Label: "Retry schedule", Kind: inputList,
		Hint: "Delays between attempts, such as 5s, 5m, 30m; empty for the default (5s 5m 30m 2h 5h 10h 10h).",
		Value: func(ep db.Endpoint, _ formChoices) []string {
			out := make([]string, len(ep.RetrySchedule))
			for i, d := range ep.RetrySchedule {
				out[i] = d.String()
			}
			return out
		},
		Set: func(in *ops.EndpointInput, v []string) { in.RetrySchedule = listPtr(v) }},
	{Name: "rate_limit_per_sec", Label: "Rate limit (per second)", Kind: inputNumber,
		Hint:  "At most this many deliveries a second; 0 for no limit.",
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(strconv.Itoa(ep.RateLimitPerSec)) },
		Set:   func(in *ops.EndpointInput, v []string) { in.RateLimitPerSec = intPtr(v) }},
	{Name: "max_in_flight", Label: "Max in flight", Kind: inputNumber,
		Hint:  "At most this many deliveries at once (1 to 1000; default 10).",
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(strconv.Itoa(ep.MaxInFlight)) },
		Set:   func(in *ops.EndpointInput, v []string) { in.MaxInFlight = intPtr(v) }},
	{Name: "timeout", Label: "Timeout", Kind: inputText,
		Hint:  "How long an attempt may take, such as 15s (100ms to 120s; default 15s).",
		Value: func(ep db.Endpoint, _ formChoices) []string { return one(ep.Timeout.String()) },
		Set:   func(in *ops.EndpointInput, v []string) { in.Timeout = optional(v) }},
	{Name: "batch", Label: "Batch", Kind: inputText,
		Hint: "Send deliveries as JSON arrays: the most events per request and how long one may wait for others, such as 100 2s (1 to 100 events; 0s to 10s, default 1s). Empty: one delivery per request.",
		Value: func(ep db.Endpoint, _ formChoices) []string {
			if ep.Batch.MaxEvents == 0 {
				return one("")
			}
			return one(strconv.Itoa(ep.Batch.MaxEvents) + " " + ep.Batch.MaxWait.String())
		},
		Set: setBatch},
}

// setBatch reads the batch input, "<max events> [<max wait>]": empty turns
// batching off; the operations layer judges the values.
func setBatch(in *ops.EndpointInput, vals []string) {
	parts := strings.Fields(first(vals))
	if len(parts) == 0 {
		in.RemoveBatch = true
		return
	}
	b := &ops.BatchInput{MaxEvents: intPtr(parts[:1])}
	if b.MaxEvents == nil {
		n := notANumber
		b.MaxEvents = &n
	}
	if len(parts) > 1 {
		wait := strings.Join(parts[1:], " ")
		b.MaxWait = &wait
	}
	in.Batch = b
}

// notANumber stands for a number input that holds no whole number: the
// operations layer refuses it with the field's own message (its bounds).
const notANumber = -1 << 40

func intPtr(vals []string) *int {
	s := strings.TrimSpace(first(vals))
	if s == "" {
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		n = notANumber
	}
	return &n
}

// formInput reads the posted form into an EndpointInput for ep (nil: a new
// endpoint).
func formInput(c echo.Context, ep *db.Endpoint) (ops.EndpointInput, error) {
	var in ops.EndpointInput
	for _, f := range endpointForm {
		if f.Apply != nil {
			if err := f.Apply(&in, postedParams(c, f), ep); err != nil {
				return in, err
			}
			continue
		}
		f.Set(&in, postedValues(c, f))
	}
	return in, nil
}

// postedParams are a composite field's posted inputs by name.
func postedParams(c echo.Context, f formField) map[string][]string {
	params, _ := c.FormParams()
	out := make(map[string][]string, len(f.Params))
	for _, p := range f.Params {
		out[p] = params[p]
	}
	return out
}

// postedValues are field f's values as posted.
func postedValues(c echo.Context, f formField) []string {
	params, _ := c.FormParams()
	vals := append([]string{}, params[f.Name]...)
	switch f.Kind {
	case inputList:
		vals = splitList(first(vals))
	case inputChecks:
		if f.Other {
			vals = append(vals, splitList(first(params[f.Name+"_other"]))...)
		}
	}
	return vals
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// fieldView is a field as the template shows it.
type fieldView struct {
	formField
	Value      string // text kinds
	Options    []optionView
	OtherValue string // the values not offered (checks with Other)
	Error      string
	Focus      bool // the first field in error takes the focus
	// Composite fields: the header rows, the credentials.
	Headers headersView
	Auth    authView
}

type optionView struct {
	Value, Label string
	Checked      bool
}

// formView is the endpoint form with values and errors.
type formView struct {
	Fields []fieldView
	Error  string // an error of no one field
}

// buildForm lays out the form of ep (nil: a new endpoint) with vals (by
// field or input name) and errs.
func buildForm(ch formChoices, vals map[string][]string, errs fieldErrors, ep *db.Endpoint) formView {
	var fv formView
	fv.Error = errs[""]
	focused := false
	for _, f := range endpointForm {
		if (f.Name == "url" || f.Name == "batch") && ep != nil && ep.Type == db.EndpointPoll {
			continue // a poll endpoint has none
		}
		v := fieldView{formField: f, Error: errs[f.Name]}
		if v.Error != "" && !focused {
			v.Focus, focused = true, true
		}
		cur := vals[f.Name]
		switch f.Kind {
		case inputHeaders:
			v.Headers = buildHeaders(vals)
		case inputAuth:
			v.Auth = buildAuth(vals, ep)
		case inputChecks, inputSelect:
			offered := map[string]bool{}
			for _, o := range f.Options(ch) {
				offered[o.Value] = true
				v.Options = append(v.Options, optionView{Value: o.Value, Label: o.Label, Checked: slices.Contains(cur, o.Value)})
			}
			var other []string
			for _, x := range cur {
				if !offered[x] {
					other = append(other, x)
				}
			}
			v.OtherValue = strings.Join(other, ", ")
		case inputList:
			v.Value = strings.Join(cur, ", ")
		default:
			v.Value = first(cur)
		}
		fv.Fields = append(fv.Fields, v)
	}
	return fv
}

// endpointValues are ep's fields as the form shows them.
func endpointValues(ep db.Endpoint, ch formChoices) map[string][]string {
	out := map[string][]string{}
	for _, f := range endpointForm {
		if f.Current != nil {
			for k, v := range f.Current(ep) {
				out[k] = v
			}
			continue
		}
		out[f.Name] = f.Value(ep, ch)
	}
	return out
}

// postedForm are the posted values by field name, to show them again.
func postedForm(c echo.Context) map[string][]string {
	out := map[string][]string{}
	for _, f := range endpointForm {
		if f.Params != nil {
			for k, v := range postedParams(c, f) {
				out[k] = v
			}
			continue
		}
		out[f.Name] = postedValues(c, f)
	}
	return out
}

// choices loads the pick lists for merchant merchantID: every carrier, and
// the event types its endpoints name.
func (d *Dashboard) choices(ctx context.Context, merchantID int64) (formChoices, error) {
	var ch formChoices
	var err error
	if ch.Carriers, err = d.store.CarrierAll(ctx); err != nil {
		return ch, err
	}
	eps, err := d.store.EndpointList(ctx, merchantID, 0, 1000)
	if err != nil {
		return ch, err
	}
	for _, ep := range eps {
		for _, e := range ep.EventTypes {
			if !slices.Contains(ch.EventTypes, e) {
				ch.EventTypes = append(ch.EventTypes, e)
			}
		}
	}
	slices.Sort(ch.EventTypes)
	return ch, nil
}
