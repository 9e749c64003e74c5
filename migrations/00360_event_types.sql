-- +goose Up
-- The catalog of canonical event types: a name merchants subscribe to and
-- parse by (lowercase, dotted: tracking.updated), a description, and the
-- JSON Schema its events' data must match. Each change of the schema or the
-- examples adds a version; old versions stay readable, current_version
-- names the one events are validated against. A deprecated type still
-- validates: deprecation tells merchants to move, it refuses nothing.
CREATE TABLE event_types (
    name              text PRIMARY KEY
        CHECK (length(name) <= 128 AND name ~ '^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$'),
    description       text NOT NULL DEFAULT '',
    current_version   integer NOT NULL DEFAULT 1 CHECK (current_version > 0),
    deprecated_at     timestamptz,
    deprecation_note  text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE event_type_versions (
    name        text NOT NULL REFERENCES event_types (name) ON DELETE CASCADE,
    version     integer NOT NULL CHECK (version > 0),
    schema      jsonb NOT NULL,
    examples    jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(examples) = 'array'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, version)
);

-- A change of the catalog raises the configuration version and announces
-- it (migration 00120), so every process's compiled schemas follow it.
-- Every version comes with an update of its type's current_version, so the
-- trigger on event_types is enough.
CREATE TRIGGER event_types_config_changed AFTER INSERT OR UPDATE OR DELETE ON event_types
    FOR EACH ROW EXECUTE FUNCTION hookrelay_config_changed();

-- +goose Down
DROP TRIGGER event_types_config_changed ON event_types;
DROP TABLE event_type_versions;
DROP TABLE event_types;
