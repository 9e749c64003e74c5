-- Dead letters are written by DeadLetterInsert in the transaction of the
-- acknowledgement that deleted the delivery (db.DeliveryAckBatch).

-- name: DeadLetterInsert :exec
-- One dead letter per deleted delivery, with its merchant and carrier looked
-- up; a delivery dead-lettered again (an operator retry that died) replaces
-- its earlier letter.
INSERT INTO dead_letters (id, message_id, message_received_at, endpoint_id, merchant_id,
                          carrier_id, queue, ordering_key, event_type, attempts,
                          last_status, last_error)
SELECT x.id, x.message_id, x.message_received_at, x.endpoint_id, coalesce(e.merchant_id, 0),
       coalesce(m.carrier_id, 0), x.queue, x.ordering_key, coalesce(m.event_type, ''), x.attempts,
       x.status, x.error
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(message_ids)::bigint[]) AS message_id,
             unnest(sqlc.arg(message_received_ats)::timestamptz[]) AS message_received_at,
             unnest(sqlc.arg(endpoint_ids)::bigint[]) AS endpoint_id,
             unnest(sqlc.arg(queues)::smallint[]) AS queue,
             unnest(sqlc.arg(ordering_keys)::text[]) AS ordering_key,
             unnest(sqlc.arg(attempts)::integer[]) AS attempts,
             unnest(sqlc.arg(statuses)::integer[]) AS status,
             unnest(sqlc.arg(errors)::text[]) AS error) x
LEFT JOIN messages m ON m.id = x.message_id AND m.received_at = x.message_received_at
LEFT JOIN endpoints e ON e.id = x.endpoint_id
ON CONFLICT (id) DO UPDATE SET
    attempts = excluded.attempts, last_status = excluded.last_status,
    last_error = excluded.last_error, created_at = now();

-- name: DeadLetterGet :one
SELECT * FROM dead_letters WHERE id = $1;

-- name: DeadLetterList :many
-- Up to @lim dead letters matching the filter (NULL matches everything; the
-- id sets, a scope's merchants and carriers, match their members only),
-- keyset on (created_at, id): oldest first after the cursor, or with @newest
-- newest first before it. Each direction is a branch of its own so that
-- either walks an index in its order and stops at the limit; the branch of
-- the other direction is cut by its one-time filter before it reads a row,
-- and the outer sort orders at most @lim rows.
WITH d AS NOT MATERIALIZED (
    SELECT * FROM dead_letters
    WHERE (sqlc.narg(endpoint_id)::bigint IS NULL OR endpoint_id = sqlc.narg(endpoint_id)::bigint)
      AND (sqlc.narg(carrier_id)::bigint IS NULL OR carrier_id = sqlc.narg(carrier_id)::bigint)
      AND (sqlc.narg(merchant_id)::bigint IS NULL OR merchant_id = sqlc.narg(merchant_id)::bigint)
      AND (sqlc.narg(merchant_ids)::bigint[] IS NULL OR merchant_id = ANY(sqlc.narg(merchant_ids)::bigint[]))
      AND (sqlc.narg(carrier_ids)::bigint[] IS NULL OR carrier_id = ANY(sqlc.narg(carrier_ids)::bigint[]))
      AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since)::timestamptz)
)
SELECT * FROM (
    (SELECT * FROM d
     WHERE NOT @newest::boolean AND (created_at, id) > (@cursor_at::timestamptz, @cursor_id::bigint)
     ORDER BY created_at, id LIMIT @lim)
    UNION ALL
    (SELECT * FROM d
     WHERE @newest::boolean AND (created_at, id) < (@cursor_at::timestamptz, @cursor_id::bigint)
     ORDER BY created_at DESC, id DESC LIMIT @lim)
) page
ORDER BY CASE WHEN @newest::boolean THEN created_at END DESC,
         CASE WHEN @newest::boolean THEN id END DESC,
         created_at, id;

-- name: DeadLetterCountCapped :one
-- Dead letters matching the filter (NULL matches everything), counted up to
-- @cap: exact while few, cheap however many.
SELECT count(*)::bigint FROM (
    SELECT 1 FROM dead_letters
    WHERE (sqlc.narg(endpoint_id)::bigint IS NULL OR endpoint_id = sqlc.narg(endpoint_id)::bigint)
      AND (sqlc.narg(carrier_id)::bigint IS NULL OR carrier_id = sqlc.narg(carrier_id)::bigint)
      AND (sqlc.narg(merchant_id)::bigint IS NULL OR merchant_id = sqlc.narg(merchant_id)::bigint)
      AND (sqlc.narg(merchant_ids)::bigint[] IS NULL OR merchant_id = ANY(sqlc.narg(merchant_ids)::bigint[]))
      AND (sqlc.narg(carrier_ids)::bigint[] IS NULL OR carrier_id = ANY(sqlc.narg(carrier_ids)::bigint[]))
      AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since)::timestamptz)
    LIMIT @cap
) AS d;

-- name: DeadLetterCount :one
SELECT count(*)::bigint AS n FROM dead_letters;

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
      AND (sqlc.narg(merchant_ids)::bigint[] IS NULL OR d.merchant_id = ANY(sqlc.narg(merchant_ids)::bigint[]))
      AND (sqlc.narg(carrier_ids)::bigint[] IS NULL OR d.carrier_id = ANY(sqlc.narg(carrier_ids)::bigint[]))
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
  AND (sqlc.narg(merchant_ids)::bigint[] IS NULL OR d.merchant_id = ANY(sqlc.narg(merchant_ids)::bigint[]))
  AND (sqlc.narg(carrier_ids)::bigint[] IS NULL OR d.carrier_id = ANY(sqlc.narg(carrier_ids)::bigint[]))
  AND (sqlc.narg(since)::timestamptz IS NULL OR d.created_at >= sqlc.narg(since)::timestamptz);

-- name: DeadLetterDeleteExpired :execrows
-- Dead letters whose message is past retention are history too: they go
-- before their message's partition is dropped.
DELETE FROM dead_letters WHERE message_received_at < sqlc.arg(before)::timestamptz;
