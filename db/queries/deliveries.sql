-- name: DeliveryClaim :many
-- Claims up to @batch due rows of the given logical queues in ONE statement:
-- each queue contributes at most @per_queue rows, taken fairly across the
-- endpoints that have due work in it, queues taken in the order given
-- (callers rotate it). Per queue (docs/dispatch.md, "Fair claim"):
--   * small: the queue's first @peek entries of deliveries_claim_idx are
--     read (in flight, due and waiting together). With fewer, the queue was
--     read whole: its due rows not in flight are ranked as the walk and
--     shares below would take them (round by round across endpoints from
--     the cursor, skipped endpoints left out), and the first @per_queue are
--     locked by id; the queue is not walked. Larger queues:
--   * walk (the SQL function deliveries_claim_walk, defined in functions.sql):
--     a loose index scan of deliveries_claim_idx (queue, endpoint_id,
--     visible_at, id) visits the endpoints with unparked rows in the queue,
--     one index descent each, in endpoint order starting after the queue's
--     cursor (@afters, the last endpoint the caller was served in the
--     queue) and wrapping round to it. The first entry of each endpoint
--     carries its earliest visible_at, so an endpoint whose rows all wait
--     (retries, held, circuit open) costs that descent and no more. The walk
--     stops once it has @per_queue endpoints with due rows, or after
--     8 * @per_queue endpoints: its cost is bounded by the claim's size,
--     whatever the number of endpoints, and endpoints with nothing queued
--     are not in the index at all;
--   * share: each due endpoint gives at most ceil(@per_queue / n) of its
--     oldest due rows (in (visible_at, id) order, FOR UPDATE SKIP LOCKED),
--     n the due endpoints walked; the rows are then taken round by round
--     (every endpoint's first, then every second, ...) up to @per_queue.
--     An endpoint with fewer rows than its share leaves the rest of the
--     queue's share to the queues after it in the claim.
--   * skip: endpoints the caller has at their max_in_flight (migration
--     00270) are walked past like endpoints with nothing due: their rows
--     would only step aside;
-- For each candidate:
--   * of a poll endpoint (migration 00330): parked, never leased;
--   * not the head of its (endpoint, ordering key) chain: park it
--     (visible_at = 'infinity') after taking FOR KEY SHARE SKIP LOCKED on its
--     immediate predecessor; if that lock cannot be had (the predecessor is
--     being deleted, or is gone) the row is left untouched for the next claim
--     (the parking race, docs/architecture.md);
--   * head of a disabled or deleted endpoint: held, re-checked in a minute;
--   * head of an endpoint whose circuit is open: waits for the probe time,
--     attempt unchanged; once the probe is due only the first head of that
--     endpoint in the batch goes (the probe), the others wait a little;
--   * otherwise leased: leased_until = now() + lease, lease_owner, lease_token;
--     visible_at is left alone, so the lease is a HOT update (no index entry;
--     migration 00060). Rows whose lease has not expired are skipped by the
--     candidate scan: they are read, not locked.
-- Only leased rows are returned, with what the sender needs from messages and
-- carriers, the statement's own time so far (server_us) and the configuration
-- version it saw.
--
-- The statement's own transaction commits with synchronous_commit off
-- (set_config(..., true) lasts until that commit; the session keeps its
-- setting): a claim lost in a crash leaves its rows as they were — due, or
-- leased under a token nobody holds until the lease runs out — so nothing is
-- lost, and a delivery made under a lost lease is at worst made again, the
-- duplicate at-least-once allows. The claim then does not wait for a WAL
-- flush (a third of the commits at full load).
WITH cand AS MATERIALIZED (
    SELECT c.id, c.endpoint_id, c.ordering_key, c.ordered
    FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit(v)
    CROSS JOIN (SELECT unnest(sqlc.arg(queues)::smallint[]) AS queue,
                       unnest(sqlc.arg(afters)::bigint[]) AS after) AS q
    -- The queue's first @peek rows in the claim index (in flight, due and
    -- waiting together; an index scan that stops there): how many there
    -- are, and those due and not in flight, in index order.
    CROSS JOIN LATERAL (
        SELECT count(*) AS n,
               coalesce(array_agg(h.id) FILTER (WHERE h.free), '{}') AS ids,
               coalesce(array_agg(h.endpoint_id) FILTER (WHERE h.free), '{}') AS eps
        FROM (
            SELECT d.id, d.endpoint_id,
                   d.visible_at <= now() AND (d.leased_until IS NULL OR d.leased_until <= now())
                     AND d.endpoint_id <> ALL (coalesce(sqlc.arg(skip)::bigint[], '{}')) AS free
            FROM deliveries d
            WHERE d.queue = q.queue AND d.visible_at < 'infinity'
            ORDER BY d.endpoint_id, d.visible_at, d.id
            LIMIT sqlc.arg(peek)::integer
        ) h
    ) pk
    CROSS JOIN LATERAL (
        -- A queue with fewer rows than @peek was read whole: its due rows,
        -- ranked as the walk would take them when there are more than
        -- @per_queue, are locked by id. Only one of the two branches runs
        -- (each is gated by pk.n).
        (SELECT sm.id, sm.endpoint_id, sm.ordering_key, sm.ordered
         FROM (
            SELECT d.id, d.endpoint_id, d.ordering_key, d.ordered
            FROM deliveries d
            WHERE pk.n < sqlc.arg(peek)::integer
              AND d.id = ANY (CASE
                  WHEN cardinality(pk.ids) <= sqlc.arg(per_queue)::integer THEN pk.ids
                  ELSE ARRAY(
                      SELECT u.id
                      FROM (SELECT pk.ids[i] AS id, pk.eps[i] AS ep,
                                   row_number() OVER (PARTITION BY pk.eps[i] ORDER BY i) AS rn
                            FROM generate_subscripts(pk.ids, 1) AS i) u
                      ORDER BY u.rn, u.ep <= q.after, u.ep
                      LIMIT sqlc.arg(per_queue)::integer)
                  END)
              AND d.queue = q.queue -- the queue's range of the claim index, never all of it
              AND d.visible_at <= now() AND d.visible_at < 'infinity'
              AND (d.leased_until IS NULL OR d.leased_until <= now())
            FOR UPDATE SKIP LOCKED
         ) sm)
        UNION ALL
        -- A larger queue: the walk and the shares.
        (SELECT wk.id, wk.endpoint_id, wk.ordering_key, wk.ordered
         FROM (SELECT r.id, r.endpoint_id, r.ordering_key, r.ordered
         FROM (
            SELECT c.id, c.endpoint_id, c.ordering_key, c.ordered, w.turn, c.rn
            FROM deliveries_claim_walk(q.queue, q.after, sqlc.arg(per_queue)::integer, sqlc.arg(skip)::bigint[]) AS w (endpoint_id, turn, share)
            CROSS JOIN LATERAL (
                -- Each row's rank within its endpoint's share, numbered as
                -- the share scan returns them.
                SELECT s.id, s.endpoint_id, s.ordering_key, s.ordered,
                       row_number() OVER (ORDER BY s.visible_at, s.id) AS rn
                FROM (
                    -- "visible_at < 'infinity'" is the index's predicate, which
                    -- "visible_at <= now()" does not imply.
                    SELECT d.id, d.endpoint_id, d.ordering_key, d.ordered, d.visible_at
                    FROM deliveries d
                    WHERE d.queue = q.queue AND d.endpoint_id = w.endpoint_id
                      AND d.visible_at <= now()
                      AND d.visible_at < 'infinity'
                      AND (d.leased_until IS NULL OR d.leased_until <= now())
                    ORDER BY d.visible_at, d.id
                    LIMIT w.share
                    FOR UPDATE SKIP LOCKED
                ) s
            ) c
         ) r
         ORDER BY r.rn, r.turn
         LIMIT sqlc.arg(per_queue)::integer) wk
         -- Above the LIMIT, so a small queue does not even start its sort.
         WHERE pk.n >= sqlc.arg(peek)::integer)
    ) c
    LIMIT sqlc.arg(batch)::integer
),
info AS MATERIALIZED (
    SELECT c.id, c.endpoint_id,
           -- The chain row just before c, from deliveries_chain_idx: the row
           -- comparison places the scan, the equalities end it at the
           -- chain's edge (migration 00070: why the endpoint index cannot
           -- take this look-up).
           CASE WHEN c.ordered THEN (
               SELECT p.id FROM deliveries p
               WHERE (p.endpoint_id, p.ordering_key, p.id) < (c.endpoint_id, c.ordering_key, c.id)
                 AND p.endpoint_id = c.endpoint_id AND p.ordering_key = c.ordering_key
                 AND p.ordered
               ORDER BY p.endpoint_id DESC, p.ordering_key DESC, p.id DESC LIMIT 1)
           END AS pred_id,
           coalesce(e.status, 'deleted') AS ep_status,
           coalesce(e.type, 'push') AS ep_type,
           coalesce(h.circuit_state, 'closed') AS circuit_state,
           h.circuit_open_until
    FROM cand c
    LEFT JOIN endpoints e ON e.id = c.endpoint_id
    LEFT JOIN endpoint_health h ON h.endpoint_id = c.endpoint_id
),
locked_pred AS MATERIALIZED (
    SELECT p.id FROM deliveries p
    WHERE p.id IN (SELECT i.pred_id FROM info i WHERE i.pred_id IS NOT NULL)
    FOR KEY SHARE SKIP LOCKED
),
-- locked_pred is joined here, not looked up from decide: CTEs are computed
-- as their readers pull rows, and decide's rows are pulled one at a time by
-- upd, so a look-up from decide would take some of the predecessor locks
-- after upd had already updated those rows in this same statement (a row this
-- statement updated cannot be locked by it: it was skipped, and the row
-- behind it left for the next claim). The window's sort reads all of its
-- input, locks included, before upd updates anything.
ranked AS MATERIALIZED (
    SELECT i.*, (lp.id IS NOT NULL) AS pred_locked,
           row_number() OVER (PARTITION BY i.endpoint_id, (i.pred_id IS NULL) ORDER BY i.id) AS head_rank
    FROM info i
    LEFT JOIN locked_pred lp ON lp.id = i.pred_id
),
decide AS MATERIALIZED (
    SELECT r.id, r.endpoint_id, r.circuit_state, r.circuit_open_until,
           CASE
               -- A poll endpoint's rows are fetched by its merchant, never
               -- sent: parked for good, out of the claim index.
               WHEN r.ep_type = 'poll' THEN 'park'
               WHEN r.pred_id IS NOT NULL THEN
                   CASE WHEN r.pred_locked THEN 'park' ELSE 'skip' END
               WHEN r.ep_status <> 'enabled' THEN 'hold'
               WHEN r.circuit_open_until > now() THEN 'wait'
               WHEN r.circuit_state <> 'closed' AND r.head_rank > 1 THEN 'wait_probe'
               ELSE 'lease'
           END AS action
    FROM ranked r
),
-- Health rows another session holds are skipped, never waited for (a stalled
-- acknowledgement must not stop claims); the probe then goes unmarked.
probe_rows AS MATERIALIZED (
    SELECT h.endpoint_id FROM endpoint_health h
    WHERE h.endpoint_id IN (SELECT x.endpoint_id FROM decide x
                            WHERE x.action = 'lease' AND x.circuit_state <> 'closed')
    FOR UPDATE SKIP LOCKED
),
probe AS (
    UPDATE endpoint_health h
    SET circuit_state = 'half_open',
        circuit_open_until = now() + sqlc.arg(lease)::interval,
        updated_at = now()
    WHERE h.endpoint_id IN (SELECT p.endpoint_id FROM probe_rows p)
),
upd AS (
    UPDATE deliveries d
    SET visible_at = CASE x.action
            WHEN 'park' THEN 'infinity'::timestamptz
            WHEN 'hold' THEN now() + interval '1 minute'
            WHEN 'wait' THEN x.circuit_open_until
            WHEN 'wait_probe' THEN now() + interval '5 seconds'
            ELSE d.visible_at
        END,
        leased_until = CASE WHEN x.action = 'lease' THEN now() + sqlc.arg(lease)::interval END,
        lease_owner = CASE WHEN x.action = 'lease' THEN sqlc.arg(owner)::bigint END,
        lease_token = CASE WHEN x.action = 'lease' THEN sqlc.arg(token)::bigint END
    FROM decide x
    WHERE d.id = x.id AND x.action <> 'skip'
    RETURNING d.id, d.queue, d.endpoint_id, d.ordering_key, d.ordered, d.message_id,
              d.message_received_at, d.attempt, d.created_at, x.action
)
SELECT u.id, u.queue, u.endpoint_id, u.ordering_key, u.ordered, u.message_id,
       u.message_received_at, u.attempt, u.created_at,
       m.ordering_key AS message_ordering_key, -- the key itself; u's is the chain
       coalesce(m.carrier_id, 0)::bigint AS carrier_id, coalesce(m.event_type, '')::text AS event_type,
       m.payload, m.payload_key, coalesce(m.payload_size, 0)::integer AS payload_size,
       coalesce(m.payload_sha256, ''::bytea)::bytea AS payload_sha256,
       (m.id IS NOT NULL)::boolean AS message_found,
       m.traceparent, m.canonical_type, m.canonical_event,
       coalesce(c.name, '')::text AS carrier_name,
       -- How long the server has been at it, near the end: since its
       -- transaction began, at the receipt of the Bind message (locks,
       -- plan, execution; statement_timestamp() would leave out the Bind).
       -- The caller's round trip less this is waiting: for the backend to
       -- be scheduled, for the network, for the caller to run again.
       (extract(epoch FROM clock_timestamp() - transaction_timestamp()) * 1000000)::bigint AS server_us,
       -- The configuration version in this statement's snapshot (one read
       -- of a one-row table): a delivery stored after a change is claimed
       -- with the change's version or a later one, and the dispatcher
       -- reloads what it cached before then (docs/dispatch.md).
       (SELECT cv.version FROM config_version cv)::bigint AS config_version
FROM upd u
LEFT JOIN messages m ON m.id = u.message_id AND m.received_at = u.message_received_at
LEFT JOIN carriers c ON c.id = m.carrier_id
WHERE u.action = 'lease'
ORDER BY u.id;

-- name: DeliveryAckMany :many
-- Applies a batch of results, each fenced by its lease token (stale results
-- change nothing): 'success' and 'dead' delete the row, 'retry' reschedules it
-- (spending an attempt when spend), 'release' gives it back at once without an
-- attempt. Every applied result but 'release' appends a delivery_attempts row.
-- Returns the applied rows: the caller writes the dead letters of the deleted
-- 'dead' ones (DeadLetterInsert) and promotes the successors of the deleted
-- ordered ones (DeliveryPromote, a separate statement so that it sees rows
-- parked by claims it waited for). The dead letters are not a part of this
-- statement: as a part, their join of messages (every day partition) and
-- endpoints would be set up by every acknowledgement, though nearly none has
-- a dead letter.
WITH r AS (
    SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
           unnest(sqlc.arg(tokens)::bigint[]) AS token,
           unnest(sqlc.arg(kinds)::text[]) AS kind,
           unnest(sqlc.arg(spend)::boolean[]) AS spend,
           unnest(sqlc.arg(delays_ms)::bigint[]) AS delay_ms,
           unnest(sqlc.arg(outcomes)::text[]) AS outcome,
           unnest(sqlc.arg(statuses)::integer[]) AS status,
           unnest(sqlc.arg(latencies_ms)::integer[]) AS latency_ms,
           unnest(sqlc.arg(errors)::text[]) AS error,
           unnest(sqlc.arg(excerpts)::text[]) AS excerpt,
           unnest(sqlc.arg(attempted_at)::timestamptz[]) AS attempted_at
),
del AS (
    DELETE FROM deliveries d USING r
    WHERE d.id = r.id AND d.lease_token = r.token AND r.kind IN ('success', 'dead')
    RETURNING d.id, d.queue, d.endpoint_id, d.ordering_key, d.ordered, d.message_id,
              d.message_received_at, d.attempt + 1 AS attempt
),
upd AS (
    UPDATE deliveries d
    SET attempt = d.attempt + CASE WHEN r.spend THEN 1 ELSE 0 END,
        -- A result due at once keeps the row's place in its queue (and the
        -- update HOT); a later one moves it (a new claim index entry).
        visible_at = CASE WHEN r.delay_ms > 0 THEN now() + r.delay_ms * interval '1 millisecond'
                          ELSE least(d.visible_at, now()) END,
        leased_until = NULL,
        lease_owner = NULL,
        lease_token = NULL,
        last_status = CASE WHEN r.kind = 'release' THEN d.last_status ELSE r.status END,
        last_error = CASE WHEN r.kind = 'release' THEN d.last_error ELSE r.error END
    FROM r
    WHERE d.id = r.id AND d.lease_token = r.token AND r.kind IN ('retry', 'release')
    RETURNING d.id, d.endpoint_id, d.message_id, d.message_received_at, d.attempt
),
applied AS (
    SELECT x.id, x.message_id, x.message_received_at, x.endpoint_id, x.attempt FROM del x
    UNION ALL
    SELECT u.id, u.message_id, u.message_received_at, u.endpoint_id,
           u.attempt + CASE WHEN rr.spend THEN 0 ELSE 1 END
    FROM upd u JOIN r rr ON rr.id = u.id
    WHERE rr.kind <> 'release'
),
att AS (
    INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt,
                                   attempted_at, outcome, status_code, latency_ms, error,
                                   response_excerpt, dispatcher_id)
    SELECT a.id, a.message_id, a.message_received_at, a.endpoint_id, a.attempt,
           r.attempted_at, r.outcome, r.status, r.latency_ms, r.error, r.excerpt,
           sqlc.arg(dispatcher_id)::bigint
    FROM applied a JOIN r ON r.id = a.id
)
SELECT d.id, d.endpoint_id, d.ordering_key, d.ordered, true AS deleted,
       d.queue, d.message_id, d.message_received_at, d.attempt
FROM del d
UNION ALL
SELECT u.id, u.endpoint_id, ''::text AS ordering_key, false AS ordered, false AS deleted,
       0::smallint AS queue, u.message_id, u.message_received_at, u.attempt
FROM upd u;

-- name: DeliveryPromote :execrows
-- Makes the successor of each removed chain row visible now when it is parked.
-- The first parked row of the chain after the removed one comes from
-- deliveries_parked_idx (migration 00100): for nearly every removed row there
-- is none, and the look-up ends there. When there is one, it is promoted only
-- if it is the chain's next row (from deliveries_chain_idx, as in
-- DeliveryClaim): a parked row further down waits behind the rows before it.
-- The ids are gathered first (an InitPlan), then updated by primary key;
-- "parked" is re-checked as "not finite" so that the rows to update are never
-- looked for by scanning the parked index itself (with few parked rows that
-- looks as cheap, and a plan kept from such a time would read every parked
-- row of a backlog at each acknowledgement).
-- The promoted row becomes due at the time it was stored (never later than
-- now), not now: it keeps its place before the later rows of its chain in
-- the claim index, whose (visible_at, id) order the walk and the shares
-- read. Made due now it would sort behind every later row of its chain not
-- parked yet, and under a backlog a claim would park those one share at a
-- time before it reached the head (a drain of deep chains stalled for
-- minutes).
UPDATE deliveries d SET visible_at = least(d.created_at, now())
WHERE d.id = ANY (ARRAY(
    SELECT p.id
    FROM (SELECT unnest(sqlc.arg(endpoint_ids)::bigint[]) AS endpoint_id,
                 unnest(sqlc.arg(chains)::text[]) AS ordering_key,
                 unnest(sqlc.arg(ids)::bigint[]) AS id) x
    CROSS JOIN LATERAL (
        SELECT n.id FROM deliveries n
        WHERE n.visible_at = 'infinity'
          AND (n.endpoint_id, n.ordering_key, n.id) > (x.endpoint_id, x.ordering_key, x.id)
          AND n.endpoint_id = x.endpoint_id AND n.ordering_key = x.ordering_key
        ORDER BY n.endpoint_id, n.ordering_key, n.id LIMIT 1) p
    WHERE p.id = (
        SELECT c.id FROM deliveries c
        WHERE (c.endpoint_id, c.ordering_key, c.id) > (x.endpoint_id, x.ordering_key, x.id)
          AND c.endpoint_id = x.endpoint_id AND c.ordering_key = x.ordering_key
          AND c.ordered
        ORDER BY c.endpoint_id, c.ordering_key, c.id LIMIT 1)))
  AND NOT isfinite(d.visible_at);

-- name: DeliveryExtend :execrows
-- Extends the lease of rows still in flight (long HTTP calls).
UPDATE deliveries d SET leased_until = now() + sqlc.arg(lease)::interval
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id, unnest(sqlc.arg(tokens)::bigint[]) AS token) x
WHERE d.id = x.id AND d.lease_token = x.token;

-- name: DeliveryMakeVisible :execrows
-- Operator retry of a pending delivery waiting for its next attempt: due now
-- (a row already due counts too). Leased rows (in flight) and parked
-- non-heads are left alone.
UPDATE deliveries SET visible_at = least(visible_at, now())
WHERE id = $1 AND lease_token IS NULL AND visible_at < 'infinity';

-- name: DeliveryReleaseByEndpoint :execrows
-- Held rows of an endpoint become visible at once (after enable); leased rows
-- and parked non-heads (visible_at = infinity) are left alone.
UPDATE deliveries SET visible_at = now()
WHERE endpoint_id = $1 AND id > 0 -- deliveries_endpoint_idx (migration 00070)
  AND lease_token IS NULL AND visible_at > now() AND visible_at < 'infinity';

-- name: DeliveryDeleteByEndpoint :execrows
DELETE FROM deliveries WHERE endpoint_id = $1 AND id > 0; -- deliveries_endpoint_idx

-- name: DeliveryGet :one
SELECT * FROM deliveries WHERE id = $1;

-- name: DeliveryListByEndpoint :many
-- Up to @lim pending deliveries of one endpoint by id: ascending after
-- @cursor_id, or with @newest descending below it. As in DeadLetterList, each
-- direction is a branch that walks deliveries_endpoint_idx (partial on
-- id > 0, migration 00070) in its order; the other is cut before it reads a
-- row, and the outer sort orders at most @lim rows.
WITH d AS NOT MATERIALIZED (
    SELECT * FROM deliveries WHERE endpoint_id = @endpoint_id AND id > 0
)
SELECT * FROM (
    (SELECT * FROM d WHERE NOT @newest::boolean AND id > @cursor_id ORDER BY id LIMIT @lim)
    UNION ALL
    (SELECT * FROM d WHERE @newest::boolean AND id < @cursor_id ORDER BY id DESC LIMIT @lim)
) page
ORDER BY CASE WHEN @newest::boolean THEN id END DESC, id;

-- name: DeliveryCountCapped :one
-- Pending deliveries, counted up to the cap (cheap however long the backlog).
SELECT count(*) FROM (SELECT 1 FROM deliveries LIMIT sqlc.arg(cap)::bigint) AS d;

-- name: DeliveryCountByEndpoints :many
-- Pending deliveries of each of the endpoints, each counted up to a cap, in
-- one round trip (an index range scan of at most cap entries per endpoint).
SELECT e.id::bigint AS endpoint_id,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries d
                               WHERE d.endpoint_id = e.id AND d.id > 0 -- deliveries_endpoint_idx
                               LIMIT @cap) AS x)::bigint AS n
FROM unnest(@endpoint_ids::bigint[]) AS e(id);

-- name: DeliveryCountByQueue :many
-- Pending deliveries per logical queue. deliveries holds only live work, so
-- this is as cheap as the backlog is small.
SELECT queue::integer AS queue, count(*)::bigint AS n
FROM deliveries GROUP BY queue ORDER BY queue;

-- name: DeliveryBacklogByQueue :many
-- Pending deliveries per logical queue and the oldest message still pending.
SELECT queue::integer AS queue, count(*)::bigint AS pending,
       min(message_received_at)::timestamptz AS oldest
FROM deliveries GROUP BY queue;

-- name: DeliveryBacklogEstimate :one
-- The statistics collector's live row count of deliveries (no scan), and the
-- oldest message among the lowest ids (ids follow creation; cheap on the
-- primary key).
SELECT coalesce((SELECT n_live_tup FROM pg_catalog.pg_stat_user_tables
                 WHERE schemaname = current_schema() AND relname = 'deliveries'), 0)::bigint AS live,
       coalesce((SELECT extract(epoch FROM min(message_received_at)) FROM
           (SELECT message_received_at FROM deliveries ORDER BY id LIMIT 100) o), 0)::float8 AS oldest_unix;

-- name: DeliveryBacklogSampled :many
-- Pending deliveries per logical queue in a block sample of percent % of the
-- table: the shares of a large backlog without reading all of it.
SELECT queue::integer AS queue, count(*)::bigint AS pending
FROM deliveries TABLESAMPLE SYSTEM (sqlc.arg(percent)::float8) GROUP BY queue;

-- name: DeliveryOldestReceivedAt :one
-- The received time of the oldest pending delivery's message (smallest id
-- first: ids grow with time), through the primary key.
SELECT message_received_at FROM deliveries ORDER BY id LIMIT 1;

-- name: DeliveryCountReceivedBetween :one
-- Pending deliveries still referencing messages of [from, to): they pin the day.
SELECT count(*)::bigint AS n FROM deliveries
WHERE message_received_at >= sqlc.arg(from_time)::timestamptz
  AND message_received_at < sqlc.arg(to_time)::timestamptz;
