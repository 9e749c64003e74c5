-- name: DeadLetterCountByEndpoint :one
-- The queries of this file are those only tests run: db/dbtest's reads of
-- what a test checks behind a store's back, and db's own tests
-- (export_test.go). The product calls none of them.
SELECT count(*)::bigint FROM dead_letters WHERE endpoint_id = sqlc.arg(endpoint_id)::bigint;

-- name: DeliveryCountByState :many
-- Due, leased/scheduled and parked rows per logical queue.
SELECT queue::integer AS queue,
       count(*) FILTER (WHERE visible_at <= now()
                          AND (leased_until IS NULL OR leased_until <= now()))::bigint AS due,
       count(*) FILTER (WHERE visible_at < 'infinity'
                          AND (visible_at > now() OR leased_until > now()))::bigint AS waiting,
       count(*) FILTER (WHERE visible_at = 'infinity')::bigint AS parked
FROM deliveries GROUP BY queue ORDER BY queue;

-- name: DeliveryResumeByEndpoint :execrows
-- Held (not leased, not parked) rows of an endpoint become visible now (one
-- of the statements whose index db's TestEndpointStatementsUseEndpointIndex counts).
UPDATE deliveries SET visible_at = now()
WHERE endpoint_id = sqlc.arg(endpoint_id)::bigint AND id > 0 -- deliveries_endpoint_idx
  AND lease_token IS NULL AND visible_at > now() AND visible_at < 'infinity';

-- name: EndpointHealthGet :one
SELECT * FROM endpoint_health WHERE endpoint_id = sqlc.arg(endpoint_id)::bigint;

-- name: OpsDeliveryCount :one
SELECT count(*)::bigint FROM ops_deliveries;

-- name: QueueLeaseList :many
SELECT queue::integer AS queue, owner, epoch,
       greatest(expires_at, 'epoch'::timestamptz)::timestamptz AS expires_at
FROM queue_leases ORDER BY queue;

-- name: SessionSettingsGet :one
SELECT current_setting('statement_timeout')::text AS statement_timeout,
       current_setting('idle_in_transaction_session_timeout')::text AS idle_in_transaction_session_timeout,
       current_setting('lock_timeout')::text AS lock_timeout,
       current_setting('synchronous_commit')::text AS synchronous_commit;

-- name: EndpointSecretsReplace :execrows
-- Replaces every signing secret of an endpoint with @secret as stored.
UPDATE endpoint_secrets SET secret = @secret WHERE endpoint_id = @endpoint_id;
