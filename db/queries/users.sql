-- name: UserInsert :one
INSERT INTO users (email, name, role, scope, password_hash, totp_secret, auth_source, created_at)
VALUES (@email, @name, @role, @scope, @password_hash, @totp_secret, @auth_source, @now)
RETURNING *;

-- name: UserGet :one
SELECT * FROM users WHERE id = @id;

-- name: UserByEmail :one
SELECT * FROM users WHERE lower(email) = lower(@email);

-- name: UserList :many
SELECT * FROM users WHERE id > @after_id ORDER BY id LIMIT @lim;

-- name: UserUpdate :one
UPDATE users SET role = @role, scope = @scope, name = @name WHERE id = @id RETURNING *;

-- name: UserSetDeactivated :one
UPDATE users SET deactivated_at = sqlc.narg(deactivated_at)::timestamptz WHERE id = @id RETURNING *;

-- Records the TOTP step of a code just accepted, unless that step or a
-- later one was used already (a code replayed): no row then.
-- name: UserTOTPUse :execrows
UPDATE users SET totp_last_step = @step WHERE id = @id AND totp_last_step < @step;

-- name: UserLoggedIn :exec
UPDATE users SET last_login_at = @now::timestamptz WHERE id = @id;

-- name: UserCountActiveOwners :one
SELECT count(*) FROM users WHERE role = 'owner' AND deactivated_at IS NULL AND id <> @except_id;

-- Ends a user's sessions (deactivation).
-- name: DashboardSessionRevokeUser :execrows
UPDATE dashboard_sessions SET revoked_at = @now::timestamptz WHERE user_id = @user_id AND revoked_at IS NULL;

-- name: UserInviteInsert :one
INSERT INTO user_invites (token_sha256, email, role, scope, created_at, expires_at)
VALUES (@token_sha256, @email, @role, @scope, @now, @expires_at)
RETURNING id;

-- name: UserInviteGet :one
SELECT * FROM user_invites
WHERE token_sha256 = @token_sha256 AND user_id IS NULL AND used_at IS NULL AND expires_at > @now;

-- Uses an invitation; a concurrent accept of the same one waits on the
-- row and then finds it used.
-- name: UserInviteUse :one
UPDATE user_invites SET used_at = @now::timestamptz
WHERE token_sha256 = @token_sha256 AND user_id IS NULL AND used_at IS NULL AND expires_at > @now::timestamptz
RETURNING *;

-- Voids a user's unused reset links (a new one replaces them).
-- name: UserResetVoid :execrows
DELETE FROM user_invites WHERE user_id = @user_id AND used_at IS NULL;

-- name: UserResetInsert :one
INSERT INTO user_invites (token_sha256, email, role, scope, user_id, created_at, expires_at)
VALUES (@token_sha256, @email, @role, @scope, @user_id, @now, @expires_at)
RETURNING id;

-- name: UserResetGet :one
SELECT * FROM user_invites
WHERE token_sha256 = @token_sha256 AND user_id IS NOT NULL AND used_at IS NULL AND expires_at > @now;

-- Uses a reset link; a concurrent accept of the same one waits on the row
-- and then finds it used.
-- name: UserResetUse :one
UPDATE user_invites SET used_at = @now::timestamptz
WHERE token_sha256 = @token_sha256 AND user_id IS NOT NULL AND used_at IS NULL AND expires_at > @now::timestamptz
RETURNING *;

-- Sets an active password user's password and TOTP secret (empty removes
-- it); step is the TOTP step of the enrolment code (0 without one). No
-- row for a deactivated or single sign-on user.
-- name: UserSetCredentials :one
UPDATE users SET password_hash = @password_hash, totp_secret = @totp_secret,
    totp_last_step = GREATEST(totp_last_step, @step::bigint)
WHERE id = @id AND deactivated_at IS NULL AND auth_source = 'password'
RETURNING *;

-- name: UserInviteDeleteExpired :execrows
DELETE FROM user_invites WHERE expires_at <= @before;

-- name: UserTOTPListUnsealed :many
-- TOTP secrets, by user id after after_id, not sealed under the key whose
-- sealed values start with prefix (an older key).
SELECT id, totp_secret FROM users
WHERE id > @after_id AND totp_secret <> '' AND NOT starts_with(totp_secret, @prefix::text)
ORDER BY id LIMIT @lim;

-- name: UserTOTPResealMany :execrows
-- Replaces each TOTP secret still holding what the re-seal pass read.
UPDATE users o SET totp_secret = u.new_secret
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(old_secrets)::text[]) AS old_secret,
             unnest(sqlc.arg(new_secrets)::text[]) AS new_secret) u
WHERE o.id = u.id AND o.totp_secret = u.old_secret;
