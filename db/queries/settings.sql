-- name: SettingGet :one
SELECT value FROM settings WHERE name = $1;

-- name: SettingPutIfAbsent :execrows
INSERT INTO settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO NOTHING;

-- name: SettingPut :exec
INSERT INTO settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now();
