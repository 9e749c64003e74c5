-- Read-only queries behind the ops dashboard and the merchant view (web/).
-- Every query is index-driven and bounded (LIMIT, keyset pagination); counts
-- over history are estimates from pg_class or capped.

-- name: DashboardBacklogByQueue :many
-- Pending deliveries per logical queue. deliveries holds only live work, so
-- this is as cheap as the backlog is small.
SELECT queue::integer AS queue, count(*)::bigint AS n
FROM deliveries GROUP BY queue ORDER BY queue;

-- name: DashboardOldestPending :one
-- The received time of the oldest pending delivery's message (smallest id
-- first: ids grow with time), through the primary key.
SELECT message_received_at FROM deliveries ORDER BY id LIMIT 1;

-- name: DashboardCappedCount :one
-- Exact number of dead letters up to a cap (the caller shows "cap+").
SELECT count(*)::bigint FROM (SELECT 1 FROM dead_letters LIMIT @cap) AS d;

-- name: DashboardRelEstimate :one
-- Planner's row estimate for a table (sum over partitions), -1 when unknown.
SELECT COALESCE(sum(GREATEST(c.reltuples, 0)), -1)::bigint AS estimate
FROM pg_catalog.pg_class c
WHERE c.oid = to_regclass(@rel::text)
   OR c.oid IN (SELECT inhrelid FROM pg_catalog.pg_inherits WHERE inhparent = to_regclass(@rel::text));

-- name: DashboardEndpoints :many
-- Endpoints (not deleted) with their health, keyset by id; merchant_id 0 = all.
SELECT e.id, e.merchant_id, e.url, e.description, e.status, e.disabled_reason,
       e.payload_mode, e.created_at,
       COALESCE(h.consecutive_failures, 0)::integer AS consecutive_failures,
       COALESCE(h.circuit_state, 'closed')::text AS circuit_state,
       h.circuit_open_until, h.failing_since, h.last_success_at, h.last_failure_at,
       COALESCE(h.last_error, '')::text AS last_error
FROM endpoints e
LEFT JOIN endpoint_health h ON h.endpoint_id = e.id
WHERE e.status <> 'deleted'
  AND (sqlc.arg(merchant_id)::bigint = 0 OR e.merchant_id = sqlc.arg(merchant_id)::bigint)
  AND e.id > @after_id
ORDER BY e.id LIMIT @lim;

-- name: DashboardEndpointsPending :many
-- Pending deliveries of each of the endpoints, each counted up to a cap, in
-- one round trip (an index range scan of at most cap entries per endpoint).
SELECT e.id::bigint AS endpoint_id,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries d
                               WHERE d.endpoint_id = e.id AND d.id > 0 -- deliveries_endpoint_idx
                               LIMIT @cap) AS x)::bigint AS n
FROM unnest(@endpoint_ids::bigint[]) AS e(id);

-- name: DashboardDeadLetters :many
-- Dead letters, newest first, filtered (0 / NULL = any), keyset on
-- (created_at, id) below the cursor.
SELECT id, message_id, message_received_at, endpoint_id, merchant_id, carrier_id, queue,
       ordering_key, event_type, attempts, last_status, last_error, created_at
FROM dead_letters
WHERE (sqlc.arg(endpoint_id)::bigint = 0 OR endpoint_id = sqlc.arg(endpoint_id)::bigint)
  AND (sqlc.arg(carrier_id)::bigint = 0 OR carrier_id = sqlc.arg(carrier_id)::bigint)
  AND (sqlc.arg(merchant_id)::bigint = 0 OR merchant_id = sqlc.arg(merchant_id)::bigint)
  AND created_at >= sqlc.arg(since)::timestamptz
  AND created_at < sqlc.arg(until)::timestamptz
  AND (created_at, id) < (sqlc.arg(before_at)::timestamptz, sqlc.arg(before_id)::bigint)
ORDER BY created_at DESC, id DESC
LIMIT @lim;

-- name: DashboardDeadLettersCount :one
-- Dead letters matching a filter, counted up to a cap (confirmation pages).
SELECT count(*)::bigint FROM (
    SELECT 1 FROM dead_letters
    WHERE (sqlc.arg(endpoint_id)::bigint = 0 OR endpoint_id = sqlc.arg(endpoint_id)::bigint)
      AND (sqlc.arg(carrier_id)::bigint = 0 OR carrier_id = sqlc.arg(carrier_id)::bigint)
      AND (sqlc.arg(merchant_id)::bigint = 0 OR merchant_id = sqlc.arg(merchant_id)::bigint)
      AND created_at >= sqlc.arg(since)::timestamptz
      AND created_at < sqlc.arg(until)::timestamptz
    LIMIT @cap
) AS d;

-- name: DashboardPendingDelivery :one
SELECT d.id, d.queue::integer AS queue, d.endpoint_id, d.ordering_key, d.ordered, d.message_id,
       d.message_received_at, d.attempt,
       -- a leased row is next due when its lease runs out
       greatest(d.visible_at, coalesce(d.leased_until, d.visible_at))::timestamptz AS visible_at, d.last_status,
       COALESCE(d.last_error, '')::text AS last_error, d.created_at
FROM deliveries d WHERE d.id = $1;

-- name: DashboardAttempts :many
-- Every attempt of one delivery (the index on (delivery_id, attempt) of each
-- day partition), oldest first.
SELECT delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at,
       outcome, status_code, latency_ms, error, response_excerpt
FROM delivery_attempts WHERE delivery_id = $1
ORDER BY attempted_at, attempt LIMIT 200;

-- name: DashboardRecentAttempts :many
-- The newest attempts to one endpoint, keyset below (attempted_at, delivery_id).
SELECT delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at,
       outcome, status_code, latency_ms, error, response_excerpt
FROM delivery_attempts
WHERE endpoint_id = @endpoint_id
  AND attempted_at >= @since
  AND attempted_at < sqlc.arg(before_at)::timestamptz
ORDER BY attempted_at DESC LIMIT @lim;

-- name: DashboardEndpointPendingList :many
-- The newest pending deliveries of one endpoint.
SELECT d.id, d.queue::integer AS queue, d.endpoint_id, d.ordering_key, d.ordered, d.message_id,
       d.message_received_at, d.attempt,
       -- a leased row is next due when its lease runs out
       greatest(d.visible_at, coalesce(d.leased_until, d.visible_at))::timestamptz AS visible_at, d.last_status,
       COALESCE(d.last_error, '')::text AS last_error, d.created_at
FROM deliveries d
WHERE d.endpoint_id = @endpoint_id AND d.id > 0 -- deliveries_endpoint_idx (migration 00070)
ORDER BY d.id DESC LIMIT @lim;

-- name: DashboardMessage :one
-- A message by id; received_at (when known) prunes to one day partition.
SELECT * FROM messages
WHERE id = @id
  AND (sqlc.narg(received_at)::timestamptz IS NULL OR received_at = sqlc.narg(received_at)::timestamptz)
ORDER BY received_at DESC LIMIT 1;
