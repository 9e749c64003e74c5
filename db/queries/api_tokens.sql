-- name: APITokenInsert :one
INSERT INTO api_tokens (token_sha256, prefix, name, user_id, role, scope, created_at, expires_at)
VALUES (@token_sha256, @prefix, @name, sqlc.narg(user_id), @role, @scope, @now, sqlc.narg(expires_at))
RETURNING *;

-- The token of a hash while it is valid: not revoked, not expired, and
-- its user (if any) not deactivated. One look-up by the unique index, with
-- the user's row by its key. user_role is the user's current role.
-- name: APITokenAuth :one
SELECT t.id, t.name, t.user_id, t.role, t.scope, t.last_used_at,
       coalesce(u.role, '')::text AS user_role, coalesce(u.email, '')::text AS user_email
FROM api_tokens t
LEFT JOIN users u ON u.id = t.user_id
WHERE t.token_sha256 = @token_sha256
  AND t.revoked_at IS NULL
  AND (t.expires_at IS NULL OR t.expires_at > @now::timestamptz)
  AND (t.user_id IS NULL OR u.deactivated_at IS NULL);

-- name: APITokenUsed :exec
UPDATE api_tokens SET last_used_at = @now::timestamptz WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @now::timestamptz);

-- name: APITokenGet :one
SELECT * FROM api_tokens WHERE id = @id;

-- The tokens not revoked, of user_id (0: of everyone), by id.
-- name: APITokenList :many
SELECT t.*, coalesce(u.email, '')::text AS user_email
FROM api_tokens t
LEFT JOIN users u ON u.id = t.user_id
WHERE t.revoked_at IS NULL
  AND (@user_id::bigint = 0 OR t.user_id = @user_id::bigint)
  AND t.id > @after_id
ORDER BY t.id
LIMIT @lim;

-- name: APITokenRevoke :execrows
UPDATE api_tokens SET revoked_at = coalesce(revoked_at, @now::timestamptz) WHERE id = @id;

-- name: APITokenRevokeUser :execrows
UPDATE api_tokens SET revoked_at = @now::timestamptz WHERE user_id = @user_id AND revoked_at IS NULL;
