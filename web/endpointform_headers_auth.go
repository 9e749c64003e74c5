package web

import (
	"slices"
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// The endpoint form's composite fields: custom headers and credentials.
// Their values are write-only, as in the API: a stored header value,
// password or token is never put into a page. An existing header shows its
// name and a masked value; left empty it stays as it is, typed over it is
// replaced, ticked "remove" it goes. A password or token left empty keeps
// the stored one.

// Inputs of the headers field. Existing headers post their name in
// header_keep and a new value (empty: unchanged) in header_keep_value, in
// the same order; header_remove holds the names ticked for removal. New
// headers post header_name and header_value rows, in the same order.
const (
	paramHeaderKeep      = "header_keep"
	paramHeaderKeepValue = "header_keep_value"
	paramHeaderRemove    = "header_remove"
	paramHeaderName      = "header_name"
	paramHeaderValue     = "header_value"
	paramAuthType        = "auth_type"
	paramAuthUsername    = "auth_username"
	paramAuthPassword    = "auth_password"
	paramAuthToken       = "auth_token"
	fieldHeaders         = "headers"
	fieldAuth            = "auth"
	authNone             = "none"
	// newHeaderRows is how many empty rows the form offers for new headers
	// (without JavaScript rows cannot be added: save, and more appear).
	newHeaderRows = 2
)

var headersField = formField{Name: fieldHeaders, Label: "Custom headers", Kind: inputHeaders,
	Hint:   "Sent on every delivery, such as X-Api-Key. Values are write-only: a stored value is never shown; leave it empty to keep it.",
	Params: []string{paramHeaderKeep, paramHeaderKeepValue, paramHeaderRemove, paramHeaderName, paramHeaderValue},
	Current: func(ep db.Endpoint) map[string][]string {
		names := make([]string, 0, len(ep.Headers))
		for name := range ep.Headers {
			names = append(names, name)
		}
		slices.Sort(names)
		return map[string][]string{paramHeaderKeep: names}
	},
	Apply: applyHeadersForm,
}

var authField = formField{Name: fieldAuth, Label: "Authentication", Kind: inputAuth,
	Hint:   "The Authorization header of every delivery. The password and token are write-only: leave them empty to keep the stored one.",
	Params: []string{paramAuthType, paramAuthUsername, paramAuthPassword, paramAuthToken},
	Current: func(ep db.Endpoint) map[string][]string {
		if ep.Auth == nil {
			return map[string][]string{paramAuthType: {authNone}}
		}
		return map[string][]string{paramAuthType: {ep.Auth.Type}, paramAuthUsername: {ep.Auth.Username}}
	},
	Apply: applyAuthForm,
}

func fieldError(field, format string, args ...any) error {
	return &ops.FieldError{Field: field, Err: hookrelay.Errorf(hookrelay.EINVALID, format, args...)}
}

// at returns vals[i], "" past its end.
func at(vals []string, i int) string {
	if i < len(vals) {
		return vals[i]
	}
	return ""
}

// applyHeadersForm turns the header rows into the input's header changes;
// the operations layer checks names and values as it does the API's.
func applyHeadersForm(in *ops.EndpointInput, vals map[string][]string, _ *db.Endpoint) error {
	h := map[string]*string{}
	remove := vals[paramHeaderRemove]
	for i, name := range vals[paramHeaderKeep] {
		if slices.Contains(remove, name) {
			h[name] = nil
			continue
		}
		if v := at(vals[paramHeaderKeepValue], i); v != "" {
			h[name] = &v
		}
	}
	for i, name := range vals[paramHeaderName] {
		name = strings.TrimSpace(name)
		v := at(vals[paramHeaderValue], i)
		if name == "" {
			if v != "" {
				return fieldError(fieldHeaders, "headers: a value without a name (new header %d)", i+1)
			}
			continue
		}
		h[name] = &v
	}
	if len(h) > 0 {
		in.Headers = h
	}
	return nil
}

// applyAuthForm turns the credentials inputs into the input's credentials.
// A password or token left empty keeps the stored one of the same type;
// credentials as stored are left alone.
func applyAuthForm(in *ops.EndpointInput, vals map[string][]string, ep *db.Endpoint) error {
	var cur *db.EndpointAuth
	if ep != nil {
		cur = ep.Auth
	}
	typ := strings.TrimSpace(first(vals[paramAuthType]))
	user := strings.TrimSpace(first(vals[paramAuthUsername]))
	pass, tok := first(vals[paramAuthPassword]), first(vals[paramAuthToken])
	switch typ {
	case "", authNone:
		in.RemoveAuth = cur != nil
	case "basic":
		if pass == "" && cur != nil && cur.Type == "basic" {
			pass = cur.Password
		}
		if cur != nil && *cur == (db.EndpointAuth{Type: "basic", Username: user, Password: pass}) {
			return nil
		}
		in.Auth = &ops.AuthInput{Type: typ, Username: &user, Password: &pass}
	case "bearer":
		if tok == "" && cur != nil && cur.Type == "bearer" {
			tok = cur.Token
		}
		if cur != nil && *cur == (db.EndpointAuth{Type: "bearer", Token: tok}) {
			return nil
		}
		in.Auth = &ops.AuthInput{Type: typ, Token: &tok}
	default:
		in.Auth = &ops.AuthInput{Type: typ} // refused with the API's message
	}
	return nil
}

// headerRow is a header as the form shows it: an existing one by name (its
// value masked), or a new one with what was typed.
type headerRow struct {
	Name    string
	Value   string // new rows only
	Removed bool   // existing rows: ticked for removal
}

type headersView struct {
	Existing []headerRow
	New      []headerRow
	Mask     string
}

// buildHeaders lays out the header rows from vals (the endpoint's, or as
// posted): the posted new rows are kept, plus empty ones.
func buildHeaders(vals map[string][]string) headersView {
	hv := headersView{Mask: ops.HeaderMask}
	for _, name := range vals[paramHeaderKeep] {
		hv.Existing = append(hv.Existing, headerRow{Name: name, Removed: slices.Contains(vals[paramHeaderRemove], name)})
	}
	for i, name := range vals[paramHeaderName] {
		if v := at(vals[paramHeaderValue], i); name != "" || v != "" {
			hv.New = append(hv.New, headerRow{Name: name, Value: v})
		}
	}
	for range newHeaderRows {
		hv.New = append(hv.New, headerRow{})
	}
	return hv
}

// authView is the credentials as the form shows them: never a password or
// token, only whether one is stored.
type authView struct {
	Type     string // none | basic | bearer
	Username string
	// HasPassword and HasToken report whether the endpoint stores one
	// (an empty input keeps it).
	HasPassword, HasToken bool
}

func buildAuth(vals map[string][]string, ep *db.Endpoint) authView {
	av := authView{Type: first(vals[paramAuthType]), Username: first(vals[paramAuthUsername])}
	if av.Type == "" {
		av.Type = authNone
	}
	if ep != nil && ep.Auth != nil {
		av.HasPassword = ep.Auth.Type == "basic" && ep.Auth.Password != ""
		av.HasToken = ep.Auth.Type == "bearer"
	}
	return av
}
