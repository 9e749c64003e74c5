-- name: EndpointInsert :one
INSERT INTO endpoints (merchant_id, url, description, carrier_ids, event_types, max_in_flight,
                       rate_limit_per_sec, payload_mode, retry_schedule_ms, timeout_ms)
VALUES (@merchant_id, @url, @description, @carrier_ids, @event_types, @max_in_flight,
        @rate_limit_per_sec, @payload_mode, @retry_schedule_ms, @timeout_ms)
RETURNING *;

-- name: EndpointGet :one
SELECT * FROM endpoints WHERE id = $1 AND status <> 'deleted';

-- name: EndpointList :many
SELECT * FROM endpoints
WHERE status <> 'deleted'
  AND (sqlc.arg(merchant_id)::bigint = 0 OR merchant_id = sqlc.arg(merchant_id)::bigint)
  AND id > @after_id
ORDER BY id LIMIT @lim;

-- name: EndpointsLive :many
-- Every endpoint that can receive deliveries (enabled or disabled): the ingest
-- fan-out cache.
SELECT id, merchant_id, carrier_ids, event_types, status FROM endpoints
WHERE status <> 'deleted' ORDER BY id;

-- name: EndpointUpdate :one
UPDATE endpoints SET
    url                = @url,
    description        = @description,
    carrier_ids        = @carrier_ids,
    event_types        = @event_types,
    max_in_flight      = @max_in_flight,
    rate_limit_per_sec = @rate_limit_per_sec,
    payload_mode       = @payload_mode,
    retry_schedule_ms  = @retry_schedule_ms,
    timeout_ms         = @timeout_ms,
    updated_at         = now()
WHERE id = @id AND status <> 'deleted'
RETURNING *;

-- name: EndpointSetStatus :one
UPDATE endpoints SET status = @status, disabled_reason = @disabled_reason, updated_at = now()
WHERE id = @id AND status <> 'deleted'
RETURNING *;

-- name: EndpointHealthReset :exec
UPDATE endpoint_health SET consecutive_failures = 0, circuit_state = 'closed',
    circuit_open_until = NULL, circuit_backoff_ms = 0, failing_since = NULL, updated_at = now()
WHERE endpoint_id = $1;

-- name: EndpointDeliveriesRelease :execrows
-- Held rows of an endpoint become visible at once (after enable); leased rows
-- and parked non-heads (visible_at = infinity) are left alone.
UPDATE deliveries SET visible_at = now()
WHERE endpoint_id = $1 AND id > 0 -- deliveries_endpoint_idx (migration 00070)
  AND lease_token IS NULL AND visible_at > now() AND visible_at < 'infinity';

-- name: EndpointDeliveriesDelete :execrows
DELETE FROM deliveries WHERE endpoint_id = $1 AND id > 0; -- deliveries_endpoint_idx

-- name: EndpointCountByStatus :many
SELECT status, count(*)::bigint AS n FROM endpoints GROUP BY status ORDER BY status;
