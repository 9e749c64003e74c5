-- name: SettingGet :one
SELECT value FROM settings WHERE name = $1;

-- name: SettingPutIfAbsent :execrows
INSERT INTO settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO NOTHING;

-- name: SettingPut :exec
INSERT INTO settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now();

-- name: SessionSettings :one
SELECT current_setting('statement_timeout')::text AS statement_timeout,
       current_setting('idle_in_transaction_session_timeout')::text AS idle_in_transaction_session_timeout,
       current_setting('lock_timeout')::text AS lock_timeout,
       current_setting('synchronous_commit')::text AS synchronous_commit;
