-- name: DeadLetterGet :one
SELECT * FROM dead_letters WHERE id = $1;

-- name: DeadLetterList :many
-- Keyset on (created_at, id), oldest first; NULL filters match everything.
SELECT * FROM dead_letters
WHERE (sqlc.narg(endpoint_id)::bigint IS NULL OR endpoint_id = sqlc.narg(endpoint_id)::bigint)
  AND (sqlc.narg(carrier_id)::bigint IS NULL OR carrier_id = sqlc.narg(carrier_id)::bigint)
  AND (sqlc.narg(merchant_id)::bigint IS NULL OR merchant_id = sqlc.narg(merchant_id)::bigint)
  AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since)::timestamptz)
  AND (created_at, id) > (@after_at::timestamptz, @after_id::bigint)
ORDER BY created_at, id
LIMIT @lim;

-- name: DeadLetterRetry :one
-- Moves the selected dead letters back into deliveries in one statement:
-- same id, unordered (never waits for nor holds back its chain), attempt 0,
-- visible now. Dead letters of deleted endpoints stay where they are.
WITH moved AS (
    DELETE FROM dead_letters d
    USING endpoints e
    WHERE e.id = d.endpoint_id AND e.status <> 'deleted'
      AND (NOT @by_ids::boolean OR d.id = ANY(@ids::bigint[]))
      AND (sqlc.narg(endpoint_id)::bigint IS NULL OR d.endpoint_id = sqlc.narg(endpoint_id)::bigint)
      AND (sqlc.narg(carrier_id)::bigint IS NULL OR d.carrier_id = sqlc.narg(carrier_id)::bigint)
      AND (sqlc.narg(merchant_id)::bigint IS NULL OR d.merchant_id = sqlc.narg(merchant_id)::bigint)
      AND (sqlc.narg(since)::timestamptz IS NULL OR d.created_at >= sqlc.narg(since)::timestamptz)
    RETURNING d.id, d.queue, d.endpoint_id, d.ordering_key, d.message_id, d.message_received_at
), inserted AS (
    INSERT INTO deliveries (id, queue, endpoint_id, ordering_key, ordered, message_id,
                            message_received_at, attempt, visible_at)
    SELECT id, queue, endpoint_id, ordering_key, false, message_id, message_received_at, 0, now()
    FROM moved
    RETURNING 1
)
SELECT count(*) FROM inserted;

-- name: DeadLetterDiscard :execrows
DELETE FROM dead_letters d
WHERE (NOT @by_ids::boolean OR d.id = ANY(@ids::bigint[]))
  AND (sqlc.narg(endpoint_id)::bigint IS NULL OR d.endpoint_id = sqlc.narg(endpoint_id)::bigint)
  AND (sqlc.narg(carrier_id)::bigint IS NULL OR d.carrier_id = sqlc.narg(carrier_id)::bigint)
  AND (sqlc.narg(merchant_id)::bigint IS NULL OR d.merchant_id = sqlc.narg(merchant_id)::bigint)
  AND (sqlc.narg(since)::timestamptz IS NULL OR d.created_at >= sqlc.narg(since)::timestamptz);

-- name: DeadLetterCountCapped :one
SELECT count(*) FROM (SELECT 1 FROM dead_letters LIMIT sqlc.arg(cap)::bigint) AS d;
