-- Dead letters are written by DeadLetterInsert in the transaction of the
-- acknowledgement that deleted the delivery (db.DeliveryAckBatch). Listing,
-- retry and discard live in dead_letters_api.sql.

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

-- name: DeadLetterGetOne :one
SELECT * FROM dead_letters WHERE id = sqlc.arg(id)::bigint;

-- name: DeadLetterCountForEndpoint :one
SELECT count(*)::bigint FROM dead_letters WHERE endpoint_id = sqlc.arg(endpoint_id)::bigint;
