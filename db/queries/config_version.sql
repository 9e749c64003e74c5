-- name: ConfigVersionGet :one
-- The current configuration version (migration 00120).
SELECT version FROM config_version;
