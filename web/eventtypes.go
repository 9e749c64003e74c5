package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// maxEventTypesListed bounds the catalog pages (a catalog has dozens).
const maxEventTypesListed = 1000

// eventTypeView is an event type as the pages show it: its schema and
// examples pretty-printed.
type eventTypeView struct {
	db.EventType
	SchemaText string
	Examples   []string
}

func eventTypeViewOf(t db.EventType) eventTypeView {
	v := eventTypeView{EventType: t, SchemaText: indented(t.Schema)}
	var list []json.RawMessage
	if json.Unmarshal(t.Examples, &list) == nil {
		for _, ex := range list {
			v.Examples = append(v.Examples, indented(ex))
		}
	}
	return v
}

// indented is raw indented (as is when it is not JSON).
func indented(raw []byte) string {
	s, _ := prettyJSON(raw)
	return s
}

// PathName is the type's name escaped for a URL path.
func (v eventTypeView) PathName() string { return url.PathEscape(v.Name) }

// merchantEvents is the portal's catalog: every event type with its
// description, schema and examples, deprecated ones marked.
func (d *Dashboard) merchantEvents(c echo.Context) error {
	return d.renderEventTypes(c, "mevents", "Events")
}

// eventTypes lists the catalog for the operator.
func (d *Dashboard) eventTypes(c echo.Context) error {
	return d.renderEventTypes(c, "eventtypes", "Event types")
}

// renderEventTypes renders page (also its navigation entry) with the
// catalog's event types.
func (d *Dashboard) renderEventTypes(c echo.Context, page, title string) error {
	types, err := d.cfg.Ops.EventTypes(c.Request().Context(), "", maxEventTypesListed)
	if err != nil {
		return err
	}
	views := make([]eventTypeView, len(types))
	for i, t := range types {
		views[i] = eventTypeViewOf(t)
	}
	return d.render(c, http.StatusOK, page, view{Title: title, Nav: page, Data: views})
}

// eventTypeForm is the create and edit form. Name is fixed once created
// (New is false).
type eventTypeForm struct {
	New             bool
	Name            string
	Description     string
	Schema          string
	Examples        string // a JSON array
	Deprecated      bool
	DeprecationNote string
	Current         *eventTypeView // the edited type
	Versions        []db.EventTypeVersionInfo
	Errors          fieldErrors
}

// eventTypeFields are the form's fields, as the operations' messages
// start with them (the rest goes above the form).
var eventTypeFields = []string{"name", "description", "schema", "examples", "deprecation_note"}

// PathName is the type's name escaped for a URL path.
func (f eventTypeForm) PathName() string { return url.PathEscape(f.Name) }

func (d *Dashboard) renderEventTypeForm(c echo.Context, status int, f eventTypeForm) error {
	title := "New event type"
	if !f.New {
		title = "Event type " + f.Name
	}
	return d.render(c, status, "eventtypeform", view{Title: title, Nav: "eventtypes", Data: f})
}

func (d *Dashboard) eventTypeNewForm(c echo.Context) error {
	return d.renderEventTypeForm(c, http.StatusOK, eventTypeForm{New: true, Schema: "{\n  \"type\": \"object\"\n}", Examples: "[]", Errors: fieldErrors{}})
}

// jsonField reads a textarea of JSON: its error, if any, names the field.
func jsonField(f fieldErrors, name, text string) json.RawMessage {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	if !json.Valid([]byte(text)) {
		f[name] = name + " is not valid JSON"
		return nil
	}
	return json.RawMessage(text)
}

// placeEventTypeError files an operation's refusal under its field: the
// messages about examples start "examples[i]", those about the schema
// "schema".
func placeEventTypeError(f fieldErrors, err error) {
	msg := hookrelay.ErrorMessage(err)
	if strings.HasPrefix(msg, "examples") || strings.HasPrefix(msg, "at most") {
		f["examples"] = msg
		return
	}
	f.place(err, eventTypeFields...)
}

// eventTypeCreate creates an event type from the form; a refusal shows the
// form again with the error at its field.
func (d *Dashboard) eventTypeCreate(c echo.Context) error {
	f := eventTypeForm{New: true, Name: strings.TrimSpace(c.FormValue("name")), Description: c.FormValue("description"),
		Schema: c.FormValue("schema"), Examples: c.FormValue("examples"), Errors: fieldErrors{}}
	in := ops.EventTypeInput{Name: f.Name, Description: f.Description,
		Schema: jsonField(f.Errors, "schema", f.Schema), Examples: jsonField(f.Errors, "examples", f.Examples)}
	if len(f.Errors) > 0 {
		return d.renderEventTypeForm(c, http.StatusBadRequest, f)
	}
	t, err := d.cfg.Ops.CreateEventType(c.Request().Context(), in)
	if err != nil {
		if code := hookrelay.CodeOf(err); code != hookrelay.EINVALID && code != hookrelay.ECONFLICT {
			return err
		}
		placeEventTypeError(f.Errors, err)
		return d.renderEventTypeForm(c, http.StatusBadRequest, f)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/event-types/%s?done=eventtype-created", url.PathEscape(t.Name)))
}

// eventTypeEditForm shows an event type's current version in the form,
// with its versions.
func (d *Dashboard) eventTypeEditForm(c echo.Context) error {
	t, versions, err := d.cfg.Ops.EventType(c.Request().Context(), c.Param("name"), 0)
	if err != nil {
		return err
	}
	return d.renderEventTypeForm(c, http.StatusOK, eventTypeFormOf(t, versions))
}

func eventTypeFormOf(t db.EventType, versions []db.EventTypeVersionInfo) eventTypeForm {
	v := eventTypeViewOf(t)
	return eventTypeForm{Name: t.Name, Description: t.Description, Schema: v.SchemaText, Examples: indented(t.Examples),
		Deprecated: t.DeprecatedAt != nil, DeprecationNote: t.DeprecationNote, Current: &v, Versions: versions, Errors: fieldErrors{}}
}

// eventTypeUpdate applies the edit form: a schema or examples that differ
// from the current version's make a new version.
func (d *Dashboard) eventTypeUpdate(c echo.Context) error {
	ctx := c.Request().Context()
	cur, versions, err := d.cfg.Ops.EventType(ctx, c.Param("name"), 0)
	if err != nil {
		return err
	}
	f := eventTypeFormOf(cur, versions)
	f.Description, f.Schema, f.Examples = c.FormValue("description"), c.FormValue("schema"), c.FormValue("examples")
	f.Deprecated, f.DeprecationNote = c.FormValue("deprecated") != "", c.FormValue("deprecation_note")
	p := ops.EventTypePatch{Description: &f.Description, Deprecated: &f.Deprecated, DeprecationNote: &f.DeprecationNote,
		Schema: jsonField(f.Errors, "schema", f.Schema), Examples: jsonField(f.Errors, "examples", f.Examples)}
	if len(f.Errors) > 0 {
		return d.renderEventTypeForm(c, http.StatusBadRequest, f)
	}
	if _, err := d.cfg.Ops.PatchEventType(ctx, cur.Name, p); err != nil {
		if hookrelay.CodeOf(err) != hookrelay.EINVALID {
			return err
		}
		placeEventTypeError(f.Errors, err)
		return d.renderEventTypeForm(c, http.StatusBadRequest, f)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/event-types/%s?done=eventtype-saved", url.PathEscape(cur.Name)))
}

// eventTypeDeprecate deprecates an event type (its events still validate),
// with the note of the list's form.
func (d *Dashboard) eventTypeDeprecate(c echo.Context) error {
	yes := true
	note := strings.TrimSpace(c.FormValue("deprecation_note"))
	p := ops.EventTypePatch{Deprecated: &yes}
	if note != "" {
		p.DeprecationNote = &note
	}
	t, err := d.cfg.Ops.PatchEventType(c.Request().Context(), c.Param("name"), p)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/event-types/%s?done=eventtype-deprecated", url.PathEscape(t.Name)))
}
