-- Dead letters are created by DeliveryAck (deliveries.sql) in the same
-- statement that deletes the delivery. Listing, retry and discard live in
-- dead_letters_api.sql.

-- name: DeadLetterGetOne :one
SELECT * FROM dead_letters WHERE id = sqlc.arg(id)::bigint;

-- name: DeadLetterCountForEndpoint :one
SELECT count(*)::bigint FROM dead_letters WHERE endpoint_id = sqlc.arg(endpoint_id)::bigint;
