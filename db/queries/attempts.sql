-- name: AttemptsForDelivery :many
-- Every recorded attempt of one delivery, oldest first.
SELECT * FROM delivery_attempts
WHERE delivery_id = sqlc.arg(delivery_id)::bigint
ORDER BY attempt, attempted_at;

-- name: AttemptsCountForEndpoint :one
SELECT count(*)::bigint FROM delivery_attempts WHERE endpoint_id = sqlc.arg(endpoint_id)::bigint;
