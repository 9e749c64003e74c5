-- name: DeliveryListPending :many
-- visible_at is when the row is next due: a leased row's lease end.
SELECT id, message_id, message_received_at, ordering_key, ordered, attempt,
       greatest(visible_at, coalesce(leased_until, visible_at))::timestamptz AS visible_at,
       last_status, last_error, created_at
FROM deliveries
WHERE endpoint_id = @endpoint_id AND id > @after_id
  AND id > 0 -- deliveries_endpoint_idx is partial on it (migration 00070)
ORDER BY id LIMIT @lim;

-- name: DeliveryListDelivered :many
-- Successful attempts of an endpoint, newest first, keyset on (attempted_at, delivery_id).
SELECT delivery_id, message_id, message_received_at, attempt, attempted_at, status_code, latency_ms
FROM delivery_attempts
WHERE endpoint_id = @endpoint_id AND outcome = 'success'
  AND (attempted_at, delivery_id) < (@before_at::timestamptz, @before_id::bigint)
ORDER BY attempted_at DESC, delivery_id DESC LIMIT @lim;

-- name: DeliveryGetPending :one
SELECT * FROM deliveries WHERE id = $1;

-- name: DeliveryAttemptsOf :many
SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempted_at, attempt;

-- name: DeliveryMakeVisible :execrows
-- Operator retry of a pending delivery waiting for its next attempt: due now
-- (a row already due counts too). Leased rows (in flight) and parked
-- non-heads are left alone.
UPDATE deliveries SET visible_at = least(visible_at, now())
WHERE id = $1 AND lease_token IS NULL AND visible_at < 'infinity';

-- name: DeliveryCountCapped :one
-- Pending deliveries, counted up to the cap (cheap however long the backlog).
SELECT count(*) FROM (SELECT 1 FROM deliveries LIMIT sqlc.arg(cap)::bigint) AS d;
