-- name: CarrierInsert :one
INSERT INTO carriers (name, api_key_hash, api_key_prefix, ordering_key_field, event_type_field,
                      merchant_field, signing_secret, rate_limit_per_sec, signature, allowed_cidrs)
VALUES (@name, @api_key_hash, @api_key_prefix, @ordering_key_field, @event_type_field,
        @merchant_field, sqlc.narg(signing_secret), @rate_limit_per_sec, sqlc.narg(signature),
        @allowed_cidrs::text[])
RETURNING *;

-- name: CarrierGetByKeyHash :one
-- The carrier of an API key: its current key, or a previous one within its
-- rotation's overlap.
-- Two index lookups (a union, not an OR the planner would scan for).
SELECT c.* FROM carriers c WHERE c.api_key_hash = @hash AND c.deleted_at IS NULL
UNION ALL
SELECT c.* FROM carrier_previous_keys k JOIN carriers c ON c.id = k.carrier_id
WHERE k.api_key_hash = @hash AND k.expires_at > now() AND c.deleted_at IS NULL
LIMIT 1;

-- name: CarrierGet :one
SELECT * FROM carriers WHERE id = $1 AND deleted_at IS NULL;

-- name: CarrierList :many
SELECT * FROM carriers WHERE id > @after_id AND deleted_at IS NULL ORDER BY id LIMIT @lim;

-- name: CarrierListAll :many
SELECT * FROM carriers WHERE deleted_at IS NULL ORDER BY id;

-- name: CarrierCount :one
SELECT count(*) FROM carriers WHERE deleted_at IS NULL;

-- name: CarrierUpdate :one
UPDATE carriers SET
    name               = @name,
    ordering_key_field = @ordering_key_field,
    event_type_field   = @event_type_field,
    merchant_field     = @merchant_field,
    signing_secret     = sqlc.narg(signing_secret),
    signature          = sqlc.narg(signature),
    allowed_cidrs      = @allowed_cidrs::text[],
    rate_limit_per_sec = @rate_limit_per_sec,
    disabled_at        = CASE WHEN @set_disabled::boolean THEN sqlc.narg(disabled_at) ELSE disabled_at END,
    updated_at         = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

-- name: CarrierSetDisabled :one
-- Disables (disabled true) or enables the carrier; disabling an already
-- disabled carrier keeps its first disabled_at.
UPDATE carriers SET
    disabled_at = CASE WHEN @disabled::boolean THEN coalesce(disabled_at, now()) END,
    updated_at  = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

-- name: CarrierDelete :execrows
UPDATE carriers SET deleted_at = now(), updated_at = now() WHERE id = $1 AND deleted_at IS NULL;

-- name: CarrierPendingCount :one
-- Deliveries not finished of the carrier's messages, counted up to lim.
SELECT count(*) FROM (
    SELECT 1 FROM deliveries d
    JOIN messages m ON m.id = d.message_id AND m.received_at = d.message_received_at
    WHERE m.carrier_id = @carrier_id
    LIMIT @lim
) x;

-- name: CarrierKeyReplace :one
-- Gives the carrier a new API key and returns the one it replaced.
UPDATE carriers c SET api_key_hash = @api_key_hash, api_key_prefix = @api_key_prefix, updated_at = now()
FROM (SELECT o.id, o.api_key_hash, o.api_key_prefix FROM carriers o
      WHERE o.id = @carrier_id AND o.deleted_at IS NULL FOR UPDATE) old
WHERE c.id = old.id
RETURNING old.api_key_hash AS old_hash, old.api_key_prefix AS old_prefix;

-- name: CarrierPreviousKeysExpire :exec
-- Ends the carrier's previous keys after the overlap at the latest.
UPDATE carrier_previous_keys SET expires_at = now() + sqlc.arg(overlap)::interval
WHERE carrier_id = @carrier_id AND expires_at > now() + sqlc.arg(overlap)::interval;

-- name: CarrierPreviousKeysDeleteExpired :exec
DELETE FROM carrier_previous_keys WHERE carrier_id = @carrier_id AND expires_at <= now();

-- name: CarrierPreviousKeyInsert :one
-- Keeps a replaced key for the overlap; returns when it expires.
INSERT INTO carrier_previous_keys (api_key_hash, carrier_id, api_key_prefix, expires_at)
VALUES (@api_key_hash, @carrier_id, @api_key_prefix, now() + sqlc.arg(overlap)::interval)
RETURNING expires_at;

-- name: CarrierPreviousKeysLive :many
-- The previous keys still accepted, for caches.
SELECT k.api_key_hash, k.carrier_id, k.api_key_prefix, k.expires_at
FROM carrier_previous_keys k JOIN carriers c ON c.id = k.carrier_id
WHERE k.expires_at > now() AND c.deleted_at IS NULL
ORDER BY k.carrier_id, k.expires_at;

-- name: CarrierSecretListUnsealed :many
-- Signing secrets, by carrier id after after_id, not sealed under the key
-- whose sealed values start with prefix (plaintext, or an older key).
SELECT id, signing_secret::text AS secret FROM carriers
WHERE id > @after_id AND signing_secret IS NOT NULL AND NOT starts_with(signing_secret, @prefix::text)
ORDER BY id LIMIT @lim;

-- name: CarrierSecretResealMany :execrows
-- Replaces each signing secret still holding what the re-seal pass read.
UPDATE carriers c SET signing_secret = u.new_secret
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(old_secrets)::text[]) AS old_secret,
             unnest(sqlc.arg(new_secrets)::text[]) AS new_secret) u
WHERE c.id = u.id AND c.signing_secret = u.old_secret;
