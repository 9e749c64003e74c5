-- name: DeliveryPullLock :exec
-- Serialises the pulls of one poll endpoint until the transaction ends (the
-- two-key advisory lock space, apart from the one-key locks used elsewhere;
-- ids that share a key only wait for each other).
SELECT pg_advisory_xact_lock(7368330, (sqlc.arg(endpoint_id)::bigint % 2147483647)::integer);

-- name: DeliveryPullServe :many
-- Serves up to @lim of the endpoint's deliveries in id order: those not
-- covered by the cursor (@after_token, @after_id) — a row is covered when
-- a pull at or before the cursor served it: pull_token < @after_token, or
-- = @after_token with id <= @after_id. Each row served gets a fresh token
-- (one per pull, increasing) and counts an attempt. Returns the rows with
-- their messages, carriers, and the token. Runs after DeliveryPullLock, in
-- its transaction. The rows are read by deliveries_endpoint_idx (partial
-- on id > 0, migration 00070), from the start of the endpoint's range.
WITH tok AS MATERIALIZED (
    SELECT nextval('deliveries_pull_token_seq')::bigint AS t
), cand AS MATERIALIZED (
    SELECT d.id FROM deliveries d
    -- The endpoint's range of deliveries_endpoint_idx, as row comparisons
    -- (@next_endpoint_id is @endpoint_id + 1): with an equality on
    -- endpoint_id the order by id would be the primary key's too, and a
    -- generic plan could walk the primary key over every endpoint's rows
    -- (TestPullStatementsUseTheirIndexes).
    WHERE (d.endpoint_id, d.id) > (@endpoint_id::bigint, 0)
      AND (d.endpoint_id, d.id) < (@next_endpoint_id::bigint, 0) AND d.id > 0
      AND (d.pull_token IS NULL OR d.pull_token > @after_token::bigint
           OR (d.pull_token = @after_token::bigint AND d.id > @after_id::bigint))
    ORDER BY d.endpoint_id, d.id -- the index's order: never the primary key's scan
    LIMIT @lim::integer
    FOR UPDATE
), upd AS (
    UPDATE deliveries d
    SET pull_token = (SELECT t FROM tok), attempt = d.attempt + 1
    FROM cand c
    WHERE d.id = c.id
    RETURNING d.id, d.message_id, d.message_received_at, d.attempt, d.pull_token
)
SELECT u.id, u.message_id, u.message_received_at, u.attempt, u.pull_token::bigint AS token,
       coalesce(m.ordering_key, '')::text AS ordering_key,
       coalesce(m.event_type, '')::text AS event_type,
       coalesce(c.name, '')::text AS carrier_name,
       m.payload, m.payload_key, m.canonical_type, m.canonical_event,
       (m.id IS NOT NULL)::boolean AS message_found
FROM upd u
LEFT JOIN messages m ON m.id = u.message_id AND m.received_at = u.message_received_at
LEFT JOIN carriers c ON c.id = m.carrier_id
ORDER BY u.id;

-- name: DeliveryPullAck :execrows
-- Acknowledges the endpoint's deliveries covered by the cursor (@token,
-- @id): deleted, each with a 'success' attempt in history (status 0: no
-- HTTP answer, the merchant fetched it). Rows served again after the
-- cursor's pull carry a later token and stay. Reads deliveries_pull_idx.
WITH del AS (
    DELETE FROM deliveries d
    WHERE d.endpoint_id = @endpoint_id::bigint
      AND d.pull_token IS NOT NULL
      AND (d.pull_token < @token::bigint OR (d.pull_token = @token::bigint AND d.id <= @id::bigint))
    RETURNING d.id, d.message_id, d.message_received_at, d.endpoint_id, d.attempt
), att AS (
    INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt,
                                   attempted_at, outcome, status_code, latency_ms, error, response_excerpt)
    SELECT x.id, x.message_id, x.message_received_at, x.endpoint_id, greatest(x.attempt, 1),
           now(), 'success', 0, 0, '', 'acknowledged by pull'
    FROM del x
)
SELECT 1 FROM del;

-- name: DeliveryPullLag :many
-- Per endpoint: its pending deliveries, counted up to @cap, and the receipt
-- time of its oldest (lowest id; ids follow creation) in unix seconds, 0
-- when none.
SELECT e.id::bigint AS endpoint_id,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries d
                               WHERE (d.endpoint_id, d.id) > (e.id, 0) AND (d.endpoint_id, d.id) < (e.id + 1, 0)
                                 AND d.id > 0 -- deliveries_endpoint_idx, as in DeliveryPullServe
                               LIMIT @cap::bigint) AS x)::bigint AS pending,
       coalesce((SELECT extract(epoch FROM d.message_received_at) FROM deliveries d
                 WHERE (d.endpoint_id, d.id) > (e.id, 0) AND (d.endpoint_id, d.id) < (e.id + 1, 0) AND d.id > 0
                 ORDER BY d.endpoint_id, d.id LIMIT 1), 0)::float8 AS oldest_unix
FROM unnest(@endpoint_ids::bigint[]) AS e(id);

-- name: EndpointPollIDs :many
-- The poll endpoints (not deleted), by id, up to @lim.
SELECT id, merchant_id FROM endpoints
WHERE type = 'poll' AND status <> 'deleted'
ORDER BY id LIMIT @lim::integer;

-- name: DeliveryPullExpire :execrows
-- The deliveries of poll endpoints whose message was received before
-- @before (not acknowledged within retention) become dead letters: the
-- same row as a push delivery out of attempts, with the reason.
WITH moved AS (
    DELETE FROM deliveries d
    USING endpoints e
    WHERE e.type = 'poll' AND d.endpoint_id = e.id AND d.id > 0
      AND d.message_received_at < @before::timestamptz
    RETURNING d.id, d.message_id, d.message_received_at, d.endpoint_id,
              d.queue, d.ordering_key, d.attempt
), ins AS (
    INSERT INTO dead_letters (id, message_id, message_received_at, endpoint_id, merchant_id, carrier_id,
                              queue, ordering_key, event_type, attempts, last_status, last_error)
    SELECT x.id, x.message_id, x.message_received_at, x.endpoint_id, coalesce(ep.merchant_id, 0),
           coalesce(m.carrier_id, 0), x.queue, x.ordering_key, coalesce(m.event_type, ''),
           x.attempt, NULL, 'not acknowledged within the retention window'
    FROM moved x
    LEFT JOIN endpoints ep ON ep.id = x.endpoint_id
    LEFT JOIN messages m ON m.id = x.message_id AND m.received_at = x.message_received_at
    ON CONFLICT (id) DO UPDATE SET
        attempts = excluded.attempts, last_status = excluded.last_status,
        last_error = excluded.last_error, created_at = now()
)
SELECT 1 FROM moved;
