-- name: MessageIDsReserve :many
SELECT nextval('messages_id_seq')::bigint AS id FROM generate_series(1, sqlc.arg(n)::integer);

-- name: DeliveryIDsReserve :many
SELECT nextval('deliveries_id_seq')::bigint AS id FROM generate_series(1, sqlc.arg(n)::integer);

-- name: IDsReserve :one
-- Message and delivery ids for one batch, in one round trip.
SELECT coalesce((SELECT array_agg(nextval('messages_id_seq')) FROM generate_series(1, sqlc.arg(messages)::integer)), '{}')::bigint[] AS message_ids,
       coalesce((SELECT array_agg(nextval('deliveries_id_seq')) FROM generate_series(1, sqlc.arg(deliveries)::integer)), '{}')::bigint[] AS delivery_ids;

-- name: MessageCopy :copyfrom
INSERT INTO messages (id, received_at, carrier_id, event_type, ordering_key, merchant_ref, queue,
                      idempotency_key, payload, payload_key, payload_size, payload_sha256, deliveries)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- name: DeliveryCopy :copyfrom
INSERT INTO deliveries (id, queue, endpoint_id, ordering_key, message_id, message_received_at)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: MessageGet :one
SELECT * FROM messages WHERE id = @id AND received_at = @received_at;

-- name: MessageGetByID :one
SELECT * FROM messages WHERE id = $1 ORDER BY received_at DESC LIMIT 1;

-- name: MessageCountSinceCapped :one
-- Messages received since a time (today's partition: cheap with the primary key's index).
SELECT count(*) FROM (SELECT 1 FROM messages WHERE received_at >= @since LIMIT sqlc.arg(cap)::bigint) AS m;
