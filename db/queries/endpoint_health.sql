-- name: EndpointHealthEnsure :exec
-- Creates missing health rows. Rows that exist are filtered out first: an
-- ON CONFLICT check against a row another transaction is updating would wait
-- for that transaction.
INSERT INTO endpoint_health (endpoint_id)
SELECT x FROM unnest(sqlc.arg(endpoint_ids)::bigint[]) AS x
WHERE NOT EXISTS (SELECT 1 FROM endpoint_health h WHERE h.endpoint_id = x)
ON CONFLICT (endpoint_id) DO NOTHING;

-- name: EndpointHealthApply :many
-- Folds one ack batch's outcomes per endpoint into endpoint_health (rows must
-- exist: EndpointHealthEnsure) and disables endpoints that answered 410 or
-- have been failing since before now() - @disable_after.
--   successes: successful attempts; failures: failed attempts that count for
--   the circuit; trailing: failures after the batch's last success (all
--   failures when there was none); gone: some attempt got 410.
-- Circuit: @threshold consecutive failures open it for @base_backoff; a failed
-- probe (half_open, or open and due) doubles the wait up to @max_backoff; a
-- success closes it.
-- Health rows locked by another session are skipped (SKIP LOCKED), never
-- waited for: a dispatcher stalled inside a transaction must not stop the
-- others. Only the endpoints returned were applied; the caller carries the
-- rest over to its next batch.
-- Transitions (a circuit opened or closed, an endpoint disabled) add their
-- operational webhook events to the outbox in the same statement, only while
-- some ops endpoint wants them: the state before is the one read under the
-- row lock (lk), so a batch that changes no state inserts nothing.
WITH lk AS MATERIALIZED (
    SELECT h.endpoint_id, h.circuit_state AS old_state FROM endpoint_health h
    WHERE h.endpoint_id = ANY(sqlc.arg(endpoint_ids)::bigint[])
    ORDER BY h.endpoint_id
    FOR UPDATE SKIP LOCKED
),
x AS (
    SELECT unnest(sqlc.arg(endpoint_ids)::bigint[]) AS endpoint_id,
           unnest(sqlc.arg(successes)::integer[]) AS successes,
           unnest(sqlc.arg(failures)::integer[]) AS failures,
           unnest(sqlc.arg(trail)::integer[]) AS trail,
           unnest(sqlc.arg(gone)::boolean[]) AS gone,
           unnest(sqlc.arg(last_errors)::text[]) AS last_error
),
hu AS (
    UPDATE endpoint_health h SET
        consecutive_failures = CASE WHEN n.successes > 0 THEN n.trail
                                    ELSE h.consecutive_failures + n.failures END,
        failing_since = CASE
            WHEN n.successes > 0 AND n.trail = 0 THEN NULL
            WHEN n.successes > 0 THEN now()
            WHEN n.failures > 0 THEN coalesce(h.failing_since, now())
            ELSE h.failing_since END,
        last_success_at = CASE WHEN n.successes > 0 THEN now() ELSE h.last_success_at END,
        last_failure_at = CASE WHEN n.failures > 0 THEN now() ELSE h.last_failure_at END,
        last_error = CASE WHEN n.last_error <> '' THEN n.last_error ELSE h.last_error END,
        circuit_state = CASE
            WHEN n.successes > 0 AND n.trail = 0 THEN 'closed'
            WHEN (CASE WHEN n.successes > 0 THEN n.trail ELSE h.consecutive_failures + n.failures END)
                 < sqlc.arg(threshold)::integer THEN
                 CASE WHEN n.successes > 0 THEN 'closed' ELSE h.circuit_state END
            WHEN h.circuit_state = 'closed' OR n.successes > 0 THEN 'open'
            WHEN h.circuit_state = 'half_open' OR h.circuit_open_until <= now() THEN 'open'
            ELSE h.circuit_state END,
        circuit_backoff_ms = CASE
            WHEN n.successes > 0 AND n.trail = 0 THEN 0
            WHEN (CASE WHEN n.successes > 0 THEN n.trail ELSE h.consecutive_failures + n.failures END)
                 < sqlc.arg(threshold)::integer THEN
                 CASE WHEN n.successes > 0 THEN 0 ELSE h.circuit_backoff_ms END
            WHEN h.circuit_state = 'closed' OR n.successes > 0 THEN sqlc.arg(base_backoff_ms)::bigint
            WHEN h.circuit_state = 'half_open' OR h.circuit_open_until <= now() THEN
                 least(greatest(h.circuit_backoff_ms, sqlc.arg(base_backoff_ms)::bigint) * 2,
                       sqlc.arg(max_backoff_ms)::bigint)
            ELSE h.circuit_backoff_ms END,
        circuit_open_until = CASE
            WHEN n.successes > 0 AND n.trail = 0 THEN NULL
            WHEN (CASE WHEN n.successes > 0 THEN n.trail ELSE h.consecutive_failures + n.failures END)
                 < sqlc.arg(threshold)::integer THEN
                 CASE WHEN n.successes > 0 THEN NULL ELSE h.circuit_open_until END
            WHEN h.circuit_state = 'closed' OR n.successes > 0 THEN
                 now() + sqlc.arg(base_backoff_ms)::bigint * interval '1 millisecond'
            WHEN h.circuit_state = 'half_open' OR h.circuit_open_until <= now() THEN
                 now() + least(greatest(h.circuit_backoff_ms, sqlc.arg(base_backoff_ms)::bigint) * 2,
                               sqlc.arg(max_backoff_ms)::bigint) * interval '1 millisecond'
            ELSE h.circuit_open_until END,
        updated_at = now()
    FROM x AS n
    WHERE h.endpoint_id = n.endpoint_id AND h.endpoint_id IN (SELECT lk.endpoint_id FROM lk)
    RETURNING h.endpoint_id, h.circuit_state, h.consecutive_failures, h.failing_since,
              h.circuit_open_until, h.last_error
),
dis AS (
    UPDATE endpoints e SET status = 'disabled', updated_at = now(),
        disabled_reason = CASE WHEN x.gone THEN 'the endpoint answered 410 Gone'
                               ELSE 'deliveries failing for too long' END
    FROM x JOIN hu ON hu.endpoint_id = x.endpoint_id
    WHERE e.id = x.endpoint_id AND e.status = 'enabled'
      AND (x.gone OR hu.failing_since < now() - sqlc.arg(disable_after)::interval)
    RETURNING e.id, e.merchant_id, e.disabled_reason
),
ev AS (
    INSERT INTO ops_events (type, endpoint_id, data)
    SELECT t.type, t.endpoint_id, t.data FROM (
        SELECT 'endpoint.circuit_opened' AS type, hu.endpoint_id,
               jsonb_build_object('endpoint_id', hu.endpoint_id::text,
                   'merchant_id', (SELECT e.merchant_id FROM endpoints e WHERE e.id = hu.endpoint_id)::text,
                   'consecutive_failures', hu.consecutive_failures,
                   'open_until', hu.circuit_open_until, 'last_error', hu.last_error) AS data
        FROM hu JOIN lk ON lk.endpoint_id = hu.endpoint_id
        WHERE lk.old_state = 'closed' AND hu.circuit_state <> 'closed'
        UNION ALL
        SELECT 'endpoint.circuit_closed', hu.endpoint_id,
               jsonb_build_object('endpoint_id', hu.endpoint_id::text,
                   'merchant_id', (SELECT e.merchant_id FROM endpoints e WHERE e.id = hu.endpoint_id)::text)
        FROM hu JOIN lk ON lk.endpoint_id = hu.endpoint_id
        WHERE lk.old_state <> 'closed' AND hu.circuit_state = 'closed'
        UNION ALL
        SELECT 'endpoint.disabled', dis.id,
               jsonb_build_object('endpoint_id', dis.id::text, 'merchant_id', dis.merchant_id::text,
                   'reason', dis.disabled_reason, 'trigger', 'automatic')
        FROM dis
    ) t
    WHERE EXISTS (SELECT 1 FROM ops_endpoints o WHERE o.events = '{}' OR t.type = ANY(o.events))
)
SELECT hu.endpoint_id, hu.circuit_state::text AS circuit_state, hu.consecutive_failures,
       (hu.endpoint_id IN (SELECT id FROM dis))::boolean AS disabled
FROM hu;

-- name: EndpointHealthReset :exec
UPDATE endpoint_health SET consecutive_failures = 0, circuit_state = 'closed',
    circuit_open_until = NULL, circuit_backoff_ms = 0, failing_since = NULL, updated_at = now()
WHERE endpoint_id = $1;

-- name: EndpointHealthCountOpen :one
SELECT count(*)::bigint FROM endpoint_health WHERE circuit_state <> 'closed';

-- name: EndpointUnreadableMark :one
-- Records that endpoint @endpoint_id's sealed values cannot be opened,
-- unless recorded already: returns its merchant when this statement set it
-- (no row otherwise), for the one endpoint.secret_unreadable event.
INSERT INTO endpoint_health AS h (endpoint_id, unreadable_since, unreadable_reason)
SELECT e.id, now(), @reason::text FROM endpoints e WHERE e.id = @endpoint_id
ON CONFLICT (endpoint_id) DO UPDATE SET unreadable_since = now(), unreadable_reason = EXCLUDED.unreadable_reason
    WHERE h.unreadable_since IS NULL
RETURNING (SELECT e.merchant_id FROM endpoints e WHERE e.id = h.endpoint_id)::bigint AS merchant_id;

-- name: EndpointUnreadableClear :execrows
-- Clears the record of EndpointUnreadableMark: the endpoint opens again.
UPDATE endpoint_health SET unreadable_since = NULL, unreadable_reason = ''
WHERE endpoint_id = @endpoint_id AND unreadable_since IS NOT NULL;

-- name: EndpointPollLaggingMark :many
-- Records that the poll endpoints @endpoint_ids lag (their oldest
-- unacknowledged delivery passed the alert threshold) at @since, unless
-- recorded already: returns the endpoints this statement marked, for one
-- endpoint.poll_lagging event each per episode.
INSERT INTO endpoint_health AS h (endpoint_id, poll_lagging_since)
SELECT e.id, @since::timestamptz FROM endpoints e
WHERE e.id = ANY(@endpoint_ids::bigint[]) AND e.type = 'poll'
ORDER BY e.id
ON CONFLICT (endpoint_id) DO UPDATE SET poll_lagging_since = EXCLUDED.poll_lagging_since
    WHERE h.poll_lagging_since IS NULL
RETURNING h.endpoint_id, (SELECT e.merchant_id FROM endpoints e WHERE e.id = h.endpoint_id)::bigint AS merchant_id;

-- name: EndpointPollLaggingClear :many
-- Clears the record of EndpointPollLaggingMark for those of @endpoint_ids
-- that have one (they caught up): returns them with when they started to
-- lag, for one endpoint.poll_caught_up event each.
WITH old AS (
    SELECT h.endpoint_id, h.poll_lagging_since FROM endpoint_health h
    WHERE h.endpoint_id = ANY(@endpoint_ids::bigint[]) AND h.poll_lagging_since IS NOT NULL
    ORDER BY h.endpoint_id
    FOR UPDATE
)
UPDATE endpoint_health h SET poll_lagging_since = NULL
FROM old JOIN endpoints e ON e.id = old.endpoint_id
WHERE h.endpoint_id = old.endpoint_id
RETURNING h.endpoint_id, e.merchant_id, old.poll_lagging_since::timestamptz AS lagging_since;
