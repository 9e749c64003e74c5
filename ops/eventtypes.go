package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/eventtype"
)

// The event type actions are the operator's; merchants read the catalog.

// EventTypeInput is a new event type.
type EventTypeInput struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Examples    json.RawMessage // a JSON array of events' data; may be empty
}

// CreateEventType adds an event type at version 1 after checking its name,
// that its schema compiles and that every example matches it.
func (s *Service) CreateEventType(ctx context.Context, in EventTypeInput) (db.EventType, error) {
	if err := eventtype.CheckName(in.Name); err != nil {
		return db.EventType{}, err
	}
	if err := eventtype.CheckDescription("description", in.Description); err != nil {
		return db.EventType{}, err
	}
	if absent(in.Schema) {
		return db.EventType{}, hookrelay.Errorf(hookrelay.EINVALID, "schema is required")
	}
	sch, err := eventtype.Compile(in.Schema)
	if err != nil {
		return db.EventType{}, err
	}
	examples, err := eventtype.CheckExamples(sch, in.Examples)
	if err != nil {
		return db.EventType{}, err
	}
	return s.db.EventTypeCreate(ctx, db.EventTypeCreateParams{
		Name: in.Name, Description: in.Description, Schema: in.Schema, Examples: examples,
	})
}

// EventTypes returns up to limit event types named after afterName, by
// name, each with its current version.
func (s *Service) EventTypes(ctx context.Context, afterName string, limit int) ([]db.EventType, error) {
	return s.db.EventTypeList(ctx, afterName, limit)
}

// EventType returns event type name with version (0: the current one) and
// the list of its versions.
func (s *Service) EventType(ctx context.Context, name string, version int) (db.EventType, []db.EventTypeVersionInfo, error) {
	if version < 0 {
		return db.EventType{}, nil, hookrelay.Errorf(hookrelay.EINVALID, "version must be a positive integer")
	}
	t, err := s.db.EventTypeGet(ctx, name, version)
	if err != nil {
		return db.EventType{}, nil, err
	}
	versions, err := s.db.EventTypeVersions(ctx, name)
	if err != nil {
		return db.EventType{}, nil, err
	}
	return t, versions, nil
}

// EventTypePatch is a change of an event type; nil fields stay as they are.
type EventTypePatch struct {
	Description *string
	// Schema and Examples, when either differs from the current version's,
	// make a new version (the other carried over); the examples must match
	// the schema.
	Schema   json.RawMessage
	Examples json.RawMessage
	// Deprecated deprecates the type (true; DeprecationNote says why and
	// what to use instead) or withdraws its deprecation (false).
	Deprecated      *bool
	DeprecationNote *string
}

// PatchEventType changes event type name.
func (s *Service) PatchEventType(ctx context.Context, name string, p EventTypePatch) (db.EventType, error) {
	if p.Description != nil {
		if err := eventtype.CheckDescription("description", *p.Description); err != nil {
			return db.EventType{}, err
		}
	}
	if p.DeprecationNote != nil {
		if err := eventtype.CheckDescription("deprecation_note", *p.DeprecationNote); err != nil {
			return db.EventType{}, err
		}
	}
	return s.db.EventTypeUpdate(ctx, name, func(cur db.EventType) (db.EventTypeChange, error) {
		c := db.EventTypeChange{
			Description: cur.Description, DeprecatedAt: cur.DeprecatedAt, DeprecationNote: cur.DeprecationNote,
		}
		if p.Description != nil {
			c.Description = *p.Description
		}
		if p.Deprecated != nil {
			switch {
			case !*p.Deprecated:
				c.DeprecatedAt, c.DeprecationNote = nil, ""
			case cur.DeprecatedAt == nil:
				now := s.now()
				c.DeprecatedAt = &now
			}
		}
		if p.DeprecationNote != nil {
			c.DeprecationNote = *p.DeprecationNote
		}
		if absent(p.Schema) && absent(p.Examples) {
			return c, nil
		}
		schema, examples := cur.Schema, cur.Examples
		if !absent(p.Schema) {
			schema = p.Schema
		}
		if !absent(p.Examples) {
			examples = p.Examples
		}
		if sameJSON(schema, cur.Schema) && sameJSON(examples, cur.Examples) {
			return c, nil
		}
		sch, err := eventtype.Compile(schema)
		if err != nil {
			return c, err
		}
		examples, err = eventtype.CheckExamples(sch, examples)
		if err != nil {
			return c, err
		}
		c.NewVersion, c.Schema, c.Examples = true, schema, examples
		return c, nil
	})
}

// absent reports whether a JSON field was left out or null.
func absent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// sameJSON reports whether a and b are the same JSON value (key order and
// spacing aside).
func sameJSON(a, b []byte) bool {
	var va, vb any
	da, dbb := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	dbb.UseNumber()
	if da.Decode(&va) != nil || dbb.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
