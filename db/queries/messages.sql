-- name: MessageIDsReserve :many
-- Counts with unnest(array_fill(...)), not generate_series(1, n): the planner
-- sizes generate_series by its arguments, so the plan for a given n looks
-- cheaper than the generic one and PostgreSQL would plan the statement again
-- at every execution; an array built from a parameter gets the same size
-- estimate in both, and the generic plan is kept.
SELECT nextval('messages_id_seq')::bigint AS id FROM unnest(array_fill(0, ARRAY[sqlc.arg(n)::integer]));

-- name: MessageInsertMany :many
-- Stores a batch of messages and their deliveries in ONE statement (one
-- round trip, atomic without BEGIN/COMMIT): takes ids for the messages that
-- have none (id 0) and for every delivery, in input order, so that the
-- deliveries of one ordering key get increasing ids in callback order
-- (chains are ordered by id); claims each message's idempotency key for
-- today (unless held today or within 24 h yesterday; sorted so concurrent
-- batches lock in one order), inserts the messages that need no key or won
-- theirs, and their deliveries. A delivery names its message by its place in
-- the input (1-based) and whether it is ordered (its endpoint's ordering, as
-- the caller's fan-out saw it). Returns, for each message stored, its place, its id
-- and its deliveries' ids in input order; the others lost their key.
-- Taking the ids here rather than in a statement of their own saves a round
-- trip per group commit. @traceparents is empty unless tracing is on (it is
-- unnested in step with the others, so an empty array gives every message a
-- NULL traceparent); when given it has one entry per message, '' for none.
-- @adapter_versions, @canonical_types, @canonical_events and @adapter_errors
-- go the same way: empty unless a message of the batch ran an adapter (0,
-- '' and NULL for none); a message with an adapter error is parked
-- (parked_callbacks).
WITH input AS MATERIALIZED (
    -- nextval in a sorted query's output runs after the sort: in input order.
    SELECT x.ord, x.received_at, x.carrier_id, x.event_type, x.ordering_key, x.merchant_ref,
           x.queue, x.idem_key, x.payload, x.payload_key, x.payload_size, x.payload_sha256, x.deliveries,
           x.traceparent, x.adapter_version, x.canonical_type, x.canonical_event, x.adapter_error,
           CASE WHEN x.given_id = 0 THEN nextval('messages_id_seq') ELSE x.given_id END AS id
    FROM (SELECT unnest(@ords::integer[])                AS ord,
                 unnest(@ids::bigint[])                  AS given_id,
                 unnest(@received_ats::timestamptz[])    AS received_at,
                 unnest(@carrier_ids::bigint[])          AS carrier_id,
                 unnest(@event_types::text[])            AS event_type,
                 unnest(@ordering_keys::text[])          AS ordering_key,
                 unnest(@merchant_refs::text[])          AS merchant_ref,
                 unnest(@queues::smallint[])             AS queue,
                 unnest(@idem_keys::text[])              AS idem_key,
                 unnest(@payloads::bytea[])              AS payload,
                 unnest(@payload_keys::text[])           AS payload_key,
                 unnest(@payload_sizes::integer[])       AS payload_size,
                 unnest(@payload_sha256s::bytea[])       AS payload_sha256,
                 unnest(@delivery_counts::integer[])     AS deliveries,
                 unnest(@traceparents::text[])           AS traceparent,
                 unnest(@adapter_versions::integer[])    AS adapter_version,
                 unnest(@canonical_types::text[])        AS canonical_type,
                 unnest(@canonical_events::bytea[])      AS canonical_event,
                 unnest(@adapter_errors::text[])         AS adapter_error) AS x
    ORDER BY x.ord
), dels AS MATERIALIZED (
    SELECT y.ord, y.message_ord, y.endpoint_id, y.ordered, nextval('deliveries_id_seq') AS id
    FROM (SELECT unnest(@delivery_ords::integer[])        AS ord,
                 unnest(@delivery_message_ords::integer[]) AS message_ord,
                 unnest(@delivery_endpoint_ids::bigint[])  AS endpoint_id,
                 unnest(@delivery_ordered::boolean[])      AS ordered) AS y
    ORDER BY y.ord
), claimed AS (
    INSERT INTO idempotency_keys (carrier_id, idem_key, day, message_id, message_received_at, deliveries)
    SELECT i.carrier_id, i.idem_key, (now() AT TIME ZONE 'UTC')::date, i.id, i.received_at, i.deliveries
    FROM input i
    WHERE i.idem_key <> ''
      AND NOT EXISTS (
        SELECT 1 FROM idempotency_keys k
        WHERE k.carrier_id = i.carrier_id AND k.idem_key = i.idem_key
          AND k.day = (now() AT TIME ZONE 'UTC')::date - 1
          AND k.created_at > now() - interval '24 hours')
    ORDER BY i.carrier_id, i.idem_key
    ON CONFLICT DO NOTHING
    RETURNING message_id
), stored AS MATERIALIZED (
    SELECT i.* FROM input i
    WHERE i.idem_key = '' OR i.id IN (SELECT c.message_id FROM claimed c)
), inserted_messages AS (
    INSERT INTO messages (id, received_at, carrier_id, event_type, ordering_key, merchant_ref, queue,
                          idempotency_key, payload, payload_key, payload_size, payload_sha256, deliveries, traceparent,
                          adapter_version, canonical_type, canonical_event)
    SELECT s.id, s.received_at, s.carrier_id, s.event_type, s.ordering_key, s.merchant_ref, s.queue,
           nullif(s.idem_key, ''), s.payload, nullif(s.payload_key, ''), s.payload_size, s.payload_sha256, s.deliveries,
           nullif(s.traceparent, ''), nullif(s.adapter_version, 0), nullif(s.canonical_type, ''), s.canonical_event
    FROM stored s
    RETURNING 1
), inserted_parked AS (
    INSERT INTO parked_callbacks (message_id, message_received_at, carrier_id, adapter_version, error)
    SELECT s.id, s.received_at, s.carrier_id, s.adapter_version, s.adapter_error
    FROM stored s
    WHERE s.adapter_error <> ''
    RETURNING 1
), inserted_deliveries AS (
    INSERT INTO deliveries (id, queue, endpoint_id, ordering_key, ordered, message_id, message_received_at)
    SELECT d.id, s.queue, d.endpoint_id, s.ordering_key, d.ordered, s.id, s.received_at
    FROM dels d
    JOIN stored s ON s.ord = d.message_ord
    RETURNING 1
)
SELECT s.ord::integer AS ord, s.id::bigint AS id, coalesce(g.ids, '{}')::bigint[] AS delivery_ids
FROM stored s
LEFT JOIN (SELECT d.message_ord, array_agg(d.id ORDER BY d.ord) AS ids
           FROM dels d GROUP BY d.message_ord) AS g ON g.message_ord = s.ord
ORDER BY s.ord;

-- name: MessageLookup :one
-- A message by id; received_at (when known) prunes to one day partition.
SELECT * FROM messages
WHERE id = @id
  AND (sqlc.narg(received_at)::timestamptz IS NULL OR received_at = sqlc.narg(received_at)::timestamptz)
ORDER BY received_at DESC LIMIT 1;

-- name: MessageCountSinceCapped :one
-- Messages received since a time (today's partition: cheap with the primary key's index).
SELECT count(*) FROM (SELECT 1 FROM messages WHERE received_at >= @since LIMIT sqlc.arg(cap)::bigint) AS m;

-- name: MessageCountWindow :one
-- Callbacks received in [from, to) (BRIN on received_at), and the sequence's
-- high-water mark (ahead of the true count by up to CACHE 100 per session).
SELECT (SELECT count(*) FROM messages
        WHERE received_at >= sqlc.arg(from_time)::timestamptz
          AND received_at < sqlc.arg(to_time)::timestamptz)::bigint AS ingested,
       coalesce(pg_sequence_last_value('messages_id_seq'::regclass), 0)::bigint AS ingested_total;

-- name: MessageSearch :many
-- Up to @lim messages received in [since, until) with an id below
-- before_id, newest first by arrival (ids are taken in arrival order; the
-- primary key (id, received_at) of each day walked backwards serves a
-- search without a key, which a sort by received_at could not: it would read
-- and sort the whole window), matching the filters (NULL matches
-- everything). With @scoped, the candidates for a delivery to endpoint_id,
-- in state, to an endpoint of merchant_id: a message has such a delivery
-- (hookrelay_messages_deliveries, defined in functions.sql, says which) only if it
-- has an attempt to that endpoint (successful for delivered, unsuccessful
-- for failed: its last one was not a success), a dead letter
-- (dead), or a row in the queue (pending). These are tested here because
-- they are cheap: an index probe of the message's attempts, and two sets,
-- the window's dead letters and the queue, each read once and hashed;
-- MessageSearch (db/messages_search.go) keeps the candidates whose
-- deliveries match. As in DeadLetterList, the search by key and the search
-- without are branches of their own, each planned for its index
-- (messages_ordering_key_idx, or the primary key within the window); the
-- other is cut by its one-time filter before it reads a row.
WITH m AS NOT MATERIALIZED (
    SELECT m.id, m.received_at, m.carrier_id, m.event_type, m.ordering_key, m.payload_size,
           (m.payload_key IS NOT NULL)::boolean AS offloaded
    FROM messages m
    WHERE m.received_at >= sqlc.arg(since)::timestamptz
      AND m.received_at < sqlc.arg(until)::timestamptz
      AND m.id < sqlc.arg(before_id)::bigint
      AND (sqlc.narg(carrier_id)::bigint IS NULL OR m.carrier_id = sqlc.narg(carrier_id)::bigint)
      AND (sqlc.narg(event_type)::text IS NULL OR m.event_type = sqlc.narg(event_type)::text)
      AND (NOT sqlc.arg(scoped)::boolean
        OR coalesce(sqlc.narg(state)::text IN ('delivered', 'failed'), true) AND EXISTS (
            SELECT 1 FROM delivery_attempts a
            WHERE a.message_id = m.id AND a.message_received_at = m.received_at
              AND a.attempted_at >= m.received_at
              AND (sqlc.narg(endpoint_id)::bigint IS NULL OR a.endpoint_id = sqlc.narg(endpoint_id)::bigint)
              AND (sqlc.narg(merchant_id)::bigint IS NULL OR a.endpoint_id IN (
                  SELECT e.id FROM endpoints e WHERE e.merchant_id = sqlc.narg(merchant_id)::bigint))
              AND (sqlc.narg(state)::text IS DISTINCT FROM 'delivered' OR a.outcome = 'success')
              AND (sqlc.narg(state)::text IS DISTINCT FROM 'failed' OR a.outcome <> 'success'))
        OR coalesce(sqlc.narg(state)::text = 'dead', true) AND m.id IN (
            SELECT dl.message_id FROM dead_letters dl
            WHERE dl.message_received_at >= sqlc.arg(since)::timestamptz
              AND dl.message_received_at < sqlc.arg(until)::timestamptz
              AND (sqlc.narg(endpoint_id)::bigint IS NULL OR dl.endpoint_id = sqlc.narg(endpoint_id)::bigint)
              AND (sqlc.narg(merchant_id)::bigint IS NULL OR dl.endpoint_id IN (
                  SELECT e.id FROM endpoints e WHERE e.merchant_id = sqlc.narg(merchant_id)::bigint)))
        OR coalesce(sqlc.narg(state)::text = 'pending', true) AND m.id IN (
            SELECT d.message_id FROM deliveries d
            WHERE d.message_received_at >= sqlc.arg(since)::timestamptz
              AND d.message_received_at < sqlc.arg(until)::timestamptz
              AND (sqlc.narg(endpoint_id)::bigint IS NULL OR d.endpoint_id = sqlc.narg(endpoint_id)::bigint)
              AND (sqlc.narg(merchant_id)::bigint IS NULL OR d.endpoint_id IN (
                  SELECT e.id FROM endpoints e WHERE e.merchant_id = sqlc.narg(merchant_id)::bigint))))
)
SELECT page.* FROM (
    (SELECT * FROM m
     WHERE sqlc.arg(by_key)::boolean AND m.ordering_key = sqlc.arg(ordering_key)::text
     ORDER BY m.id DESC LIMIT sqlc.arg(lim))
    UNION ALL
    (SELECT * FROM m
     WHERE NOT sqlc.arg(by_key)::boolean
     ORDER BY m.id DESC LIMIT sqlc.arg(lim))
) page
ORDER BY page.id DESC;

-- name: MessageDeliveriesList :many
-- The deliveries of each of the messages (id, received_at, ordering key),
-- only those to endpoints of merchant_id when it is not NULL: one call of
-- hookrelay_messages_deliveries for the set (defined in functions.sql).
SELECT d.message_id::bigint AS message_id, d.delivery_id::bigint AS delivery_id,
       d.endpoint_id::bigint AS endpoint_id, d.state::text AS state, d.attempts::integer AS attempts,
       coalesce(d.last_status, 0)::integer AS last_status,
       coalesce(d.next_attempt_at, 'infinity')::timestamptz AS next_attempt_at -- infinity: none
FROM hookrelay_messages_deliveries(sqlc.arg(ids)::bigint[], sqlc.arg(received_ats)::timestamptz[],
                                   sqlc.arg(ordering_keys)::text[]) d
WHERE sqlc.narg(merchant_id)::bigint IS NULL OR d.endpoint_id IN (
    SELECT e.id FROM endpoints e WHERE e.merchant_id = sqlc.narg(merchant_id)::bigint)
ORDER BY d.message_id, d.delivery_id;

-- name: MessageCandidatesList :many
-- For a search by endpoint, by merchant, or by state pending or dead: up to
-- @lim (message id, received at) below before_id whose message was received
-- in [since, until) and has, to endpoint_id or to an endpoint of
-- merchant_id (NULL matches everything), an attempt (state NULL, delivered,
-- failed), a row in the queue (state NULL, pending) or a dead letter (state
-- NULL, dead); newest first by message id, a message with several such rows
-- once for each. Read from these sets rather than walking the window's
-- messages, which a rare endpoint or state would make read millions of rows
-- before it fills a page:
--   - the attempts of each endpoint (ep: the one named, or the merchant's)
--     backwards along delivery_attempts_endpoint_message_idx (00250), in
--     the day partitions attempted since the window began (an attempt
--     follows its message);
--   - the queue (no index on message_id: it is the hot table) read once
--     and sorted;
--   - the dead letters: of each endpoint in ep, those it got since the
--     window began (dead_letters_endpoint_idx), sorted; with no endpoint
--     nor merchant, backwards along dead_letters_message_idx. (That walk,
--     for one endpoint, would read every older dead letter of every
--     endpoint whenever the page is not filled before the window's start.)
-- MessageSearch keeps the candidates whose deliveries match.
WITH ep AS MATERIALIZED (
    SELECT sqlc.narg(endpoint_id)::bigint AS id
    WHERE sqlc.narg(endpoint_id)::bigint IS NOT NULL
    UNION ALL
    SELECT e.id FROM endpoints e
    WHERE sqlc.narg(endpoint_id)::bigint IS NULL AND e.merchant_id = sqlc.narg(merchant_id)::bigint
)
(SELECT a.message_id, a.message_received_at
 FROM ep
 CROSS JOIN LATERAL (
     SELECT a.message_id, a.message_received_at
     FROM delivery_attempts a
     WHERE a.endpoint_id = ep.id
       AND a.message_id < sqlc.arg(before_id)::bigint
       AND a.attempted_at >= sqlc.arg(since)::timestamptz
       AND a.message_received_at >= sqlc.arg(since)::timestamptz
       AND a.message_received_at < sqlc.arg(until)::timestamptz
     ORDER BY a.message_id DESC LIMIT sqlc.arg(lim)) a
 WHERE coalesce(sqlc.narg(state)::text IN ('delivered', 'failed'), true)
 ORDER BY a.message_id DESC LIMIT sqlc.arg(lim))
UNION ALL
(SELECT d.message_id, d.message_received_at
 FROM deliveries d
 WHERE coalesce(sqlc.narg(state)::text = 'pending', true)
   AND d.message_received_at >= sqlc.arg(since)::timestamptz
   AND d.message_received_at < sqlc.arg(until)::timestamptz
   AND d.message_id < sqlc.arg(before_id)::bigint
   AND (sqlc.narg(endpoint_id)::bigint IS NULL AND sqlc.narg(merchant_id)::bigint IS NULL
        OR d.endpoint_id IN (SELECT ep.id FROM ep))
 ORDER BY d.message_id DESC LIMIT sqlc.arg(lim))
UNION ALL
(SELECT dl.message_id, dl.message_received_at
 FROM ep
 CROSS JOIN LATERAL (
     SELECT dl.message_id, dl.message_received_at
     FROM dead_letters dl
     WHERE dl.endpoint_id = ep.id
       AND dl.created_at >= sqlc.arg(since)::timestamptz
       AND dl.message_id < sqlc.arg(before_id)::bigint
       AND dl.message_received_at >= sqlc.arg(since)::timestamptz
       AND dl.message_received_at < sqlc.arg(until)::timestamptz
     ORDER BY dl.message_id DESC LIMIT sqlc.arg(lim)) dl
 WHERE coalesce(sqlc.narg(state)::text = 'dead', true)
 ORDER BY dl.message_id DESC LIMIT sqlc.arg(lim))
UNION ALL
(SELECT dl.message_id, dl.message_received_at
 FROM dead_letters dl
 WHERE coalesce(sqlc.narg(state)::text = 'dead', true)
   AND sqlc.narg(endpoint_id)::bigint IS NULL AND sqlc.narg(merchant_id)::bigint IS NULL
   AND dl.message_received_at >= sqlc.arg(since)::timestamptz
   AND dl.message_received_at < sqlc.arg(until)::timestamptz
   AND dl.message_id < sqlc.arg(before_id)::bigint
 ORDER BY dl.message_id DESC LIMIT sqlc.arg(lim))
ORDER BY message_id DESC
LIMIT sqlc.arg(lim);

-- name: MessageSummariesList :many
-- The messages of ids (each with its received_at, which selects its day
-- partition) that match carrier_id and event_type (NULL matches
-- everything), newest first.
SELECT m.id, m.received_at, m.carrier_id, m.event_type, m.ordering_key, m.payload_size,
       (m.payload_key IS NOT NULL)::boolean AS offloaded
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(received_ats)::timestamptz[]) AS received_at) c
JOIN messages m ON m.id = c.id AND m.received_at = c.received_at
WHERE (sqlc.narg(carrier_id)::bigint IS NULL OR m.carrier_id = sqlc.narg(carrier_id)::bigint)
  AND (sqlc.narg(event_type)::text IS NULL OR m.event_type = sqlc.narg(event_type)::text)
ORDER BY m.id DESC;

-- name: MessageCarrierRecent :many
-- The carrier's last @lim callbacks received since @since, newest first (the
-- primary key walked backwards: ids are taken in arrival order).
SELECT m.id, m.received_at, m.event_type, m.ordering_key, m.merchant_ref, m.payload, m.payload_key,
       m.adapter_version, m.canonical_type, m.canonical_event
FROM messages m
WHERE m.carrier_id = @carrier_id AND m.received_at >= @since
ORDER BY m.id DESC
LIMIT @lim;

-- name: MessageParkedList :many
-- The carrier's parked callbacks, oldest first, after (received_at, id) =
-- (@after_at, @after_id); those whose message is gone (retention) are
-- skipped.
SELECT m.id, m.received_at, m.event_type, m.ordering_key, m.merchant_ref, m.queue, m.payload, m.payload_key,
       p.adapter_version, p.error
FROM parked_callbacks p
JOIN messages m ON m.id = p.message_id AND m.received_at = p.message_received_at
WHERE p.carrier_id = @carrier_id
  AND (p.message_received_at, p.message_id) > (@after_at::timestamptz, @after_id::bigint)
ORDER BY p.message_received_at, p.message_id
LIMIT @lim;

-- name: MessageUnpark :one
-- Gives a parked message the event its adapter now makes, and one unordered
-- delivery to each of @endpoint_ids (the canonical endpoints it reaches), in
-- one statement. Nothing happens to a message that is no longer parked.
WITH p AS (
    DELETE FROM parked_callbacks pc
    WHERE pc.message_id = @id::bigint AND pc.message_received_at = @received_at::timestamptz
    RETURNING pc.message_id, pc.message_received_at
), u AS (
    UPDATE messages msg SET adapter_version = @adapter_version::integer,
                        canonical_type = nullif(@canonical_type::text, ''),
                        canonical_event = @canonical_event::bytea,
                        deliveries = msg.deliveries + cardinality(@endpoint_ids::bigint[])
    FROM p
    WHERE msg.id = p.message_id AND msg.received_at = p.message_received_at
    RETURNING msg.id AS message_id, msg.received_at AS message_received_at, msg.queue AS message_queue,
              msg.ordering_key AS message_ordering_key
), d AS (
    INSERT INTO deliveries (queue, endpoint_id, ordering_key, ordered, message_id, message_received_at,
                            attempt, visible_at)
    SELECT u.message_queue, e.endpoint_id, u.message_ordering_key, false, u.message_id, u.message_received_at, 0, now()
    FROM u, unnest(@endpoint_ids::bigint[]) AS e(endpoint_id)
    RETURNING 1
)
SELECT u.message_id, u.message_queue, (SELECT count(*) FROM d)::integer AS deliveries FROM u;

-- name: ParkedCallbackPurgeGone :execrows
-- Forgets the carrier's parked callbacks whose message is gone (its day
-- partition dropped by retention).
DELETE FROM parked_callbacks p
WHERE p.carrier_id = @carrier_id
  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = p.message_id AND m.received_at = p.message_received_at);
