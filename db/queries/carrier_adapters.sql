-- name: CarrierAdapterInsert :one
-- A new version of the carrier's adapter, numbered after its last one. The
-- carrier's row is locked so that concurrent inserts take turns; one that
-- still computes a taken number (its snapshot predates the other's commit)
-- fails on the primary key and is retried by the caller.
WITH c AS (
    SELECT id FROM carriers WHERE id = @carrier_id AND deleted_at IS NULL FOR UPDATE
)
INSERT INTO carrier_adapters (carrier_id, version, source, note)
SELECT c.id, coalesce((SELECT max(a.version) FROM carrier_adapters a WHERE a.carrier_id = c.id), 0) + 1,
       @source, @note
FROM c
RETURNING *;

-- name: CarrierAdapterList :many
-- The carrier's adapter versions, newest first, without their sources.
SELECT a.carrier_id, a.version, a.note, a.created_at, length(a.source)::integer AS source_size
FROM carrier_adapters a
WHERE a.carrier_id = @carrier_id
ORDER BY a.version DESC;

-- name: CarrierAdapterGet :one
SELECT * FROM carrier_adapters WHERE carrier_id = @carrier_id AND version = @version;

-- name: CarrierAdapterActiveAll :many
-- The active adapter of every carrier that has one: the routing snapshot.
SELECT a.carrier_id, a.version, a.source
FROM carriers c
JOIN carrier_adapters a ON a.carrier_id = c.id AND a.version = c.adapter_version
WHERE c.deleted_at IS NULL;

-- name: CarrierAdapterActivate :one
-- Makes version the one ingest runs (NULL: none). The version must exist
-- (the foreign key refuses another).
UPDATE carriers SET adapter_version = sqlc.narg(version)::integer, updated_at = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

-- name: CarrierSetAdapterOnFailure :one
UPDATE carriers SET adapter_on_failure = @on_failure, updated_at = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;
