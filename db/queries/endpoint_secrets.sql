-- name: EndpointSecretInsert :one
INSERT INTO endpoint_secrets (endpoint_id, secret) VALUES ($1, $2) RETURNING *;

-- name: EndpointSecretExpire :exec
-- Every secret of the endpoint still without an expiry now expires after the overlap.
UPDATE endpoint_secrets SET expires_at = now() + sqlc.arg(overlap)::interval
WHERE endpoint_id = @endpoint_id AND (expires_at IS NULL OR expires_at > now() + sqlc.arg(overlap)::interval);

-- name: EndpointSecretListActive :many
SELECT * FROM endpoint_secrets
WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > now())
ORDER BY id DESC;

-- name: EndpointSecretListUnsealed :many
-- Secrets, by id after after_id, not sealed under the key whose sealed
-- values start with prefix (plaintext, or an older key).
SELECT id, secret FROM endpoint_secrets
WHERE id > @after_id AND NOT starts_with(secret, @prefix::text)
ORDER BY id LIMIT @lim;

-- name: EndpointSecretResealMany :execrows
-- Replaces each secret still holding what the re-seal pass read.
UPDATE endpoint_secrets s SET secret = u.new_secret
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(old_secrets)::text[]) AS old_secret,
             unnest(sqlc.arg(new_secrets)::text[]) AS new_secret) u
WHERE s.id = u.id AND s.secret = u.old_secret;

-- name: EndpointSetPublicKey :exec
-- The public key of the endpoint's newest key ('' for an HMAC secret).
UPDATE endpoints SET public_key = @public_key, updated_at = now() WHERE id = @id;

-- name: EndpointSecretNewestMany :many
-- The newest unexpired secret of each of the given endpoints.
SELECT DISTINCT ON (endpoint_id) endpoint_id, secret FROM endpoint_secrets
WHERE endpoint_id = ANY(sqlc.arg(endpoint_ids)::bigint[]) AND (expires_at IS NULL OR expires_at > now())
ORDER BY endpoint_id, id DESC;
