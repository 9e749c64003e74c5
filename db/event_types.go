package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// EventType is a canonical event type of the catalog, with one of its
// versions: the current one unless asked for another.
type EventType struct {
	Name        string
	Description string
	// CurrentVersion is the version events are validated against.
	CurrentVersion int
	// DeprecatedAt is when the type was deprecated; nil while it is not.
	DeprecatedAt    *time.Time
	DeprecationNote string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// Version is the version whose Schema and Examples these are.
	Version          int
	Schema           json.RawMessage
	Examples         json.RawMessage // a JSON array
	VersionCreatedAt time.Time
}

// EventTypeVersionInfo names one version of an event type.
type EventTypeVersionInfo struct {
	Version   int
	CreatedAt time.Time
}

// EventTypeSchema is the current schema of a type, for the validators.
type EventTypeSchema struct {
	Name       string
	Version    int
	Deprecated bool
	Schema     []byte
}

func eventTypeFrom(t dbsqlc.EventType, v dbsqlc.EventTypeVersion) EventType {
	return EventType{
		Name: t.Name, Description: t.Description, CurrentVersion: int(t.CurrentVersion),
		DeprecatedAt: t.DeprecatedAt, DeprecationNote: t.DeprecationNote, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Version: int(v.Version), Schema: v.Schema, Examples: v.Examples, VersionCreatedAt: v.CreatedAt,
	}
}

// EventTypeCreateParams are a new event type and its first version.
type EventTypeCreateParams struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Examples    json.RawMessage // a JSON array
}

// EventTypeCreate inserts an event type at version 1. A name taken is
// hookrelay.ECONFLICT.
func (db *DB) EventTypeCreate(ctx context.Context, p EventTypeCreateParams) (EventType, error) {
	var out EventType
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		t, err := q.EventTypeInsert(ctx, dbsqlc.EventTypeInsertParams{Name: p.Name, Description: p.Description})
		if isCode(err, "23505") {
			return hookrelay.Errorf(hookrelay.ECONFLICT, "an event type named %q exists", p.Name)
		}
		if err != nil {
			return fmt.Errorf("insert event type: %w", unavailable(err))
		}
		v, err := q.EventTypeVersionInsert(ctx, dbsqlc.EventTypeVersionInsertParams{
			Name: p.Name, Version: 1, Schema: p.Schema, Examples: p.Examples,
		})
		if err != nil {
			return fmt.Errorf("insert event type version: %w", unavailable(err))
		}
		out = eventTypeFrom(t, v)
		return nil
	})
	return out, err
}

// EventTypeGet returns event type name with its version (0: the current
// one), or hookrelay.ENOTFOUND.
func (db *DB) EventTypeGet(ctx context.Context, name string, version int) (EventType, error) {
	t, err := db.q.EventTypeGet(ctx, name)
	if err != nil {
		return EventType{}, notFound(unavailableUnlessNoRows(err), "event type")
	}
	if version == 0 {
		version = int(t.CurrentVersion)
	}
	v, err := db.q.EventTypeVersionGet(ctx, dbsqlc.EventTypeVersionGetParams{Name: name, Version: int32(version)})
	if err != nil {
		return EventType{}, notFound(unavailableUnlessNoRows(err), "event type version")
	}
	return eventTypeFrom(t, v), nil
}

// EventTypeList returns up to limit event types named after afterName, by
// name, each with its current version.
func (db *DB) EventTypeList(ctx context.Context, afterName string, limit int) ([]EventType, error) {
	rows, err := db.q.EventTypeList(ctx, dbsqlc.EventTypeListParams{AfterName: afterName, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", unavailable(err))
	}
	out := make([]EventType, len(rows))
	for i, r := range rows {
		out[i] = EventType{
			Name: r.Name, Description: r.Description, CurrentVersion: int(r.CurrentVersion),
			DeprecatedAt: r.DeprecatedAt, DeprecationNote: r.DeprecationNote, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			Version: int(r.CurrentVersion), Schema: r.Schema, Examples: r.Examples, VersionCreatedAt: r.VersionCreatedAt,
		}
	}
	return out, nil
}

// EventTypeVersions returns the versions of event type name, oldest first.
func (db *DB) EventTypeVersions(ctx context.Context, name string) ([]EventTypeVersionInfo, error) {
	rows, err := db.q.EventTypeVersionList(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("list versions of event type %q: %w", name, unavailable(err))
	}
	out := make([]EventTypeVersionInfo, len(rows))
	for i, r := range rows {
		out[i] = EventTypeVersionInfo{Version: int(r.Version), CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// EventTypeSchemas returns the current schema of every event type, by name.
func (db *DB) EventTypeSchemas(ctx context.Context) ([]EventTypeSchema, error) {
	rows, err := db.q.EventTypeCurrentAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("load event type schemas: %w", unavailable(err))
	}
	out := make([]EventTypeSchema, len(rows))
	for i, r := range rows {
		out[i] = EventTypeSchema{Name: r.Name, Version: int(r.CurrentVersion), Deprecated: r.Deprecated, Schema: r.Schema}
	}
	return out, nil
}

// EventTypeChange is what an update makes of an event type.
type EventTypeChange struct {
	Description     string
	DeprecatedAt    *time.Time
	DeprecationNote string
	// NewVersion adds a version with Schema and Examples and makes it the
	// current one; without it they are ignored.
	NewVersion bool
	Schema     json.RawMessage
	Examples   json.RawMessage
}

// EventTypeUpdate changes event type name: change gets the type with its
// current version, locked until the transaction ends (concurrent updates
// see each other's versions), and returns what to write or an error, which
// EventTypeUpdate returns. An unknown name is hookrelay.ENOTFOUND.
func (db *DB) EventTypeUpdate(ctx context.Context, name string, change func(cur EventType) (EventTypeChange, error)) (EventType, error) {
	var out EventType
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		t, err := q.EventTypeGetForUpdate(ctx, name)
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "event type")
		}
		v, err := q.EventTypeVersionGet(ctx, dbsqlc.EventTypeVersionGetParams{Name: name, Version: t.CurrentVersion})
		if err != nil {
			return fmt.Errorf("read event type %q version %d: %w", name, t.CurrentVersion, unavailable(err))
		}
		c, err := change(eventTypeFrom(t, v))
		if err != nil {
			return err
		}
		current := t.CurrentVersion
		if c.NewVersion {
			current++
			v, err = q.EventTypeVersionInsert(ctx, dbsqlc.EventTypeVersionInsertParams{
				Name: name, Version: current, Schema: c.Schema, Examples: c.Examples,
			})
			if err != nil {
				return fmt.Errorf("insert event type version: %w", unavailable(err))
			}
		}
		t, err = q.EventTypeUpdate(ctx, dbsqlc.EventTypeUpdateParams{
			Name: name, Description: c.Description, CurrentVersion: current,
			DeprecatedAt: c.DeprecatedAt, DeprecationNote: c.DeprecationNote,
		})
		if err != nil {
			return fmt.Errorf("update event type: %w", unavailable(err))
		}
		out = eventTypeFrom(t, v)
		return nil
	})
	return out, err
}

// ConfigVersion returns the configuration version, which every change of
// carriers, merchants, endpoints or event types raises (migration 00120).
func (db *DB) ConfigVersion(ctx context.Context) (int64, error) {
	v, err := db.q.EventTypeConfigVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("read configuration version: %w", unavailable(err))
	}
	return v, nil
}
