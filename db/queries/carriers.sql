-- name: CarrierInsert :one
INSERT INTO carriers (name, api_key_hash, api_key_prefix, ordering_key_field, event_type_field,
                      merchant_field, signing_secret, rate_limit_per_sec)
VALUES (@name, @api_key_hash, @api_key_prefix, @ordering_key_field, @event_type_field,
        @merchant_field, sqlc.narg(signing_secret), @rate_limit_per_sec)
RETURNING *;

-- name: CarrierGetByKeyHash :one
SELECT * FROM carriers WHERE api_key_hash = $1;

-- name: CarrierList :many
SELECT * FROM carriers WHERE id > @after_id ORDER BY id LIMIT @lim;

-- name: CarrierListAll :many
SELECT * FROM carriers ORDER BY id;

-- name: CarrierCount :one
SELECT count(*) FROM carriers;

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
