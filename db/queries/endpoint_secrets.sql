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
