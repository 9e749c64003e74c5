-- name: SettingGet :one
SELECT value FROM settings WHERE name = $1;

-- name: SettingPutIfAbsent :execrows
INSERT INTO settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO NOTHING;

-- name: SettingPut :exec
INSERT INTO settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now();

-- name: SettingListByPrefix :many
-- Settings whose names start with @prefix, by name.
SELECT name, value FROM settings WHERE starts_with(name, @prefix::text) ORDER BY name;

-- name: SettingListUnsealed :many
-- The settings among @names whose values are not sealed under the key whose
-- sealed values start with @prefix (plaintext, or an older key).
SELECT name, value FROM settings
WHERE name = ANY(sqlc.arg(names)::text[]) AND NOT starts_with(value, @prefix::text)
ORDER BY name;

-- name: SettingReplace :execrows
-- Replaces a setting's value if it still holds what was read.
UPDATE settings SET value = @new_value, updated_at = now()
WHERE name = @name AND value = @old_value;
