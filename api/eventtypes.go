package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// EventTypeJSON is an event type as the API shows it, with one version's
// schema and examples (the current version unless ?version= asked for
// another).
type EventTypeJSON struct {
	Name            string          `json:"name"`
	Description     string          `json:"description"`
	Version         int             `json:"version"`
	CurrentVersion  int             `json:"current_version"`
	Deprecated      bool            `json:"deprecated"`
	DeprecatedAt    *time.Time      `json:"deprecated_at"`
	DeprecationNote string          `json:"deprecation_note"`
	Schema          json.RawMessage `json:"schema"`
	Examples        json.RawMessage `json:"examples"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	// Versions lists every version (GET of one type only).
	Versions []EventTypeVersionJSON `json:"versions,omitempty"`
}

// EventTypeVersionJSON names one version of an event type.
type EventTypeVersionJSON struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

func eventTypeJSON(t db.EventType) EventTypeJSON {
	return EventTypeJSON{
		Name: t.Name, Description: t.Description, Version: t.Version, CurrentVersion: t.CurrentVersion,
		Deprecated: t.DeprecatedAt != nil, DeprecatedAt: t.DeprecatedAt, DeprecationNote: t.DeprecationNote,
		Schema: t.Schema, Examples: t.Examples, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

func (s *Server) createEventType(c echo.Context) error {
	var req struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Examples    json.RawMessage `json:"examples"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.ops.CreateEventType(ctx, ops.EventTypeInput{
		Name: req.Name, Description: req.Description, Schema: req.Schema, Examples: req.Examples,
	})
	if err != nil {
		return err
	}
	_ = s.eventTypes.Refresh(ctx)
	out := eventTypeJSON(t)
	out.Versions = []EventTypeVersionJSON{{Version: t.Version, CreatedAt: t.VersionCreatedAt}}
	return c.JSON(http.StatusCreated, out)
}

// listEventTypes answers the catalog, by name, each type with its current
// version; the cursor is the last name of the page.
func (s *Server) listEventTypes(c echo.Context) error {
	limit := 100
	if raw := c.QueryParam("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 1000 {
			return invalidf("limit must be between 1 and 1000")
		}
		limit = n
	}
	after := ""
	if raw := c.QueryParam("cursor"); raw != "" {
		b, err := base64.RawURLEncoding.DecodeString(raw)
		if err != nil {
			return errBadCursor
		}
		after = string(b)
	}
	rows, err := s.ops.EventTypes(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	out := List[EventTypeJSON]{Items: make([]EventTypeJSON, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(rows[limit-1].Name))
			break
		}
		out.Items = append(out.Items, eventTypeJSON(r))
	}
	return c.JSON(http.StatusOK, out)
}

// getEventType answers an event type with its current version, or the
// version ?version= names, and the list of its versions.
func (s *Server) getEventType(c echo.Context) error {
	version := 0
	if raw := c.QueryParam("version"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return invalidf("version must be a positive integer")
		}
		version = n
	}
	t, versions, err := s.ops.EventType(c.Request().Context(), c.Param("name"), version)
	if err != nil {
		return err
	}
	out := eventTypeJSON(t)
	out.Versions = make([]EventTypeVersionJSON, len(versions))
	for i, v := range versions {
		out.Versions[i] = EventTypeVersionJSON{Version: v.Version, CreatedAt: v.CreatedAt}
	}
	return c.JSON(http.StatusOK, out)
}

// patchEventType changes an event type: a schema or examples that differ
// from the current version's make a new version.
func (s *Server) patchEventType(c echo.Context) error {
	var req struct {
		Description     *string         `json:"description"`
		Schema          json.RawMessage `json:"schema"`
		Examples        json.RawMessage `json:"examples"`
		Deprecated      *bool           `json:"deprecated"`
		DeprecationNote *string         `json:"deprecation_note"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	name := c.Param("name")
	t, err := s.ops.PatchEventType(ctx, name, ops.EventTypePatch{
		Description: req.Description, Schema: req.Schema, Examples: req.Examples,
		Deprecated: req.Deprecated, DeprecationNote: req.DeprecationNote,
	})
	if err != nil {
		return err
	}
	_ = s.eventTypes.Refresh(ctx)
	_, versions, err := s.ops.EventType(ctx, name, t.Version)
	if err != nil {
		return err
	}
	out := eventTypeJSON(t)
	for _, v := range versions {
		out.Versions = append(out.Versions, EventTypeVersionJSON{Version: v.Version, CreatedAt: v.CreatedAt})
	}
	return c.JSON(http.StatusOK, out)
}
