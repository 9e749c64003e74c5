-- name: DashboardSessionInsert :one
INSERT INTO dashboard_sessions (token_sha256, kind, merchant_id, user_id, credential_fp, created_at, last_seen_at,
                                expires_at, user_agent, client_addr)
VALUES (@token_sha256, @kind, @merchant_id, @user_id, @credential_fp, @now, @now, @expires_at, @user_agent, @client_addr)
RETURNING id;

-- A session is valid while it is neither revoked nor expired and the
-- credential that opened it is still the current one: the stored admin token
-- hash, or the merchant's key hash; a user's session while the user is
-- not deactivated (its role and scope are read here, so a change takes
-- effect at the next request). The credential check also covers a login that
-- raced a rotation and stored its row after the rotation revoked the others.
-- name: DashboardSessionGet :one
SELECT s.id, s.kind, s.merchant_id, s.user_id, s.last_seen_at, s.expires_at, s.read_only, s.portal,
       coalesce(u.role, '')::text AS user_role, coalesce(u.scope, '{}')::jsonb AS user_scope,
       coalesce(u.email, '')::text AS user_email, coalesce(u.name, '')::text AS user_name
FROM dashboard_sessions s
LEFT JOIN users u ON u.id = s.user_id
WHERE s.token_sha256 = @token_sha256
  AND s.revoked_at IS NULL
  AND s.expires_at > @now
  AND s.credential_fp = CASE s.kind
        WHEN 'admin' THEN (SELECT substring(decode(st.value, 'hex') FROM 1 FOR 8)
                           FROM settings st WHERE st.name = 'admin_token_sha256')
        WHEN 'user' THEN CASE WHEN u.deactivated_at IS NULL THEN s.credential_fp END
        ELSE (SELECT substring(m.api_key_hash FROM 1 FOR 8) FROM merchants m WHERE m.id = s.merchant_id)
      END;

-- name: DashboardSessionSeen :exec
UPDATE dashboard_sessions SET last_seen_at = @now WHERE id = @id AND last_seen_at < @now;

-- name: DashboardSessionRevoke :execrows
UPDATE dashboard_sessions SET revoked_at = coalesce(revoked_at, @now::timestamptz)
WHERE id = @id AND expires_at > @now::timestamptz;

-- name: DashboardSessionRevokeByToken :exec
UPDATE dashboard_sessions SET revoked_at = @now::timestamptz WHERE token_sha256 = @token_sha256 AND revoked_at IS NULL;

-- name: DashboardSessionRevokeMerchant :execrows
UPDATE dashboard_sessions SET revoked_at = @now::timestamptz
WHERE merchant_id = @merchant_id AND revoked_at IS NULL;

-- name: DashboardSessionRevokeAdminExcept :execrows
UPDATE dashboard_sessions SET revoked_at = @now::timestamptz
WHERE kind = 'admin' AND credential_fp <> @credential_fp AND revoked_at IS NULL;

-- The live sessions, newest first, below before_id (0: from the newest).
-- name: DashboardSessionList :many
SELECT id, kind, merchant_id, user_id, created_at, last_seen_at, expires_at, user_agent, client_addr, portal, read_only
FROM dashboard_sessions
WHERE revoked_at IS NULL AND expires_at > @now
  AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @lim;

-- name: DashboardSessionDeleteExpired :execrows
DELETE FROM dashboard_sessions WHERE expires_at <= @before;
