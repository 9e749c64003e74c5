-- name: EventTypeInsert :one
INSERT INTO event_types (name, description) VALUES (@name, @description)
RETURNING *;

-- name: EventTypeVersionInsert :one
INSERT INTO event_type_versions (name, version, schema, examples)
VALUES (@name, @version, @schema, @examples)
RETURNING *;

-- name: EventTypeGet :one
SELECT * FROM event_types WHERE name = $1;

-- name: EventTypeGetForUpdate :one
SELECT * FROM event_types WHERE name = $1 FOR UPDATE;

-- name: EventTypeUpdate :one
UPDATE event_types
SET description = @description, current_version = @current_version,
    deprecated_at = sqlc.narg(deprecated_at), deprecation_note = @deprecation_note,
    updated_at = now()
WHERE name = @name
RETURNING *;

-- name: EventTypeList :many
-- The catalog with each type's current version.
SELECT t.name, t.description, t.current_version, t.deprecated_at, t.deprecation_note,
       t.created_at, t.updated_at, v.schema, v.examples, v.created_at AS version_created_at
FROM event_types t
JOIN event_type_versions v ON v.name = t.name AND v.version = t.current_version
WHERE t.name > @after_name
ORDER BY t.name
LIMIT @lim;

-- name: EventTypeVersionGet :one
SELECT * FROM event_type_versions WHERE name = @name AND version = @version;

-- name: EventTypeVersionList :many
SELECT version, created_at FROM event_type_versions WHERE name = $1 ORDER BY version;

-- name: EventTypeCurrentAll :many
-- What the validators compile: every type's current version.
SELECT t.name, t.current_version, (t.deprecated_at IS NOT NULL)::boolean AS deprecated, v.schema
FROM event_types t
JOIN event_type_versions v ON v.name = t.name AND v.version = t.current_version
ORDER BY t.name;

-- name: EventTypeConfigVersion :one
-- The configuration version (migration 00120), which every change of the
-- catalog raises: a validator whose schemas were read at this version has
-- nothing to reload.
SELECT version FROM config_version;
