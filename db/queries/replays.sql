-- name: ReplayInsert :one
INSERT INTO replays (endpoint_id, status, ordering_key, since, until, cursor_at, total)
VALUES (@endpoint_id, @status, sqlc.narg(ordering_key), @since, @until, @since, @total)
RETURNING *;

-- name: ReplayGet :one
SELECT * FROM replays WHERE id = $1;

-- name: ReplayListRunning :many
-- The replays the runner has to advance, oldest first.
SELECT * FROM replays WHERE state = 'running' ORDER BY id LIMIT @lim;

-- name: ReplayLock :one
-- Locks a running replay for one batch. A replay another runner is advancing
-- (a hand-over of the role) is skipped, not waited for, and one cancelled
-- since it was listed is not returned.
SELECT * FROM replays WHERE id = $1 AND state = 'running' FOR UPDATE SKIP LOCKED;

-- name: ReplayAdvance :exec
-- Commits a batch: the cursor moves past the rows it read, the counters grow
-- by what it queued and what it could not, and the last batch finishes it.
UPDATE replays
SET cursor_at = @cursor_at, cursor_id = @cursor_id,
    done = done + @done, failed = failed + @failed,
    state = CASE WHEN @finished::boolean THEN 'finished' ELSE state END,
    finished_at = CASE WHEN @finished::boolean THEN now() ELSE finished_at END,
    updated_at = now()
WHERE id = @id;

-- name: ReplayCancel :one
UPDATE replays SET state = 'cancelled', finished_at = now(), updated_at = now()
WHERE id = $1 AND state = 'running'
RETURNING *;

-- name: ReplaySource :many
-- Up to @scan past deliveries of an endpoint after the cursor, in (time,
-- delivery id) order: successful attempts (@want_delivered) made in the
-- window, and dead letters (@want_failed) that died in it. Each source is a
-- keyset scan of its endpoint index (delivery_attempts_endpoint_idx on every
-- day partition; dead_letters_endpoint_idx) that stops at @scan rows, so a
-- call reads about @scan rows whatever the window holds. With each row: the
-- message's queue and ordering key (found false once the message is past
-- retention), and repeat when the same delivery already succeeded earlier in
-- the window (a duplicate, or an earlier replay of it), which is queued once.
WITH src AS MATERIALIZED (
    SELECT u.at, u.id, u.message_id, u.message_received_at, u.dead
    FROM (
        (SELECT a.attempted_at AS at, a.delivery_id AS id, a.message_id, a.message_received_at,
                false AS dead
         FROM delivery_attempts a
         WHERE @want_delivered::boolean
           AND a.endpoint_id = @endpoint_id::bigint
           AND a.attempted_at >= @cursor_at::timestamptz AND a.attempted_at < @until::timestamptz
           AND (a.attempted_at, a.delivery_id) > (@cursor_at::timestamptz, @cursor_id::bigint)
           AND a.outcome = 'success'
         ORDER BY a.attempted_at, a.delivery_id
         LIMIT @scan::integer)
        UNION ALL
        (SELECT d.created_at AS at, d.id, d.message_id, d.message_received_at, true AS dead
         FROM dead_letters d
         WHERE @want_failed::boolean
           AND d.endpoint_id = @endpoint_id::bigint
           AND d.created_at >= @cursor_at::timestamptz AND d.created_at < @until::timestamptz
           AND (d.created_at, d.id) > (@cursor_at::timestamptz, @cursor_id::bigint)
         ORDER BY d.created_at, d.id
         LIMIT @scan::integer)
    ) u
    ORDER BY u.at, u.id
    LIMIT @scan::integer
)
SELECT s.at::timestamptz AS at, s.id::bigint AS id, s.message_id::bigint AS message_id,
       s.message_received_at::timestamptz AS message_received_at, s.dead::boolean AS dead,
       (m.id IS NOT NULL)::boolean AS found,
       coalesce(m.queue, 0)::smallint AS queue,
       coalesce(m.ordering_key, '')::text AS ordering_key,
       (NOT s.dead AND EXISTS (
           SELECT 1 FROM delivery_attempts b
           WHERE b.delivery_id = s.id AND b.outcome = 'success'
             AND b.attempted_at >= @since::timestamptz AND b.attempted_at < s.at))::boolean AS repeat
FROM src s
LEFT JOIN messages m ON m.id = s.message_id AND m.received_at = s.message_received_at
ORDER BY s.at, s.id;

-- name: ReplayEnqueue :many
-- Queues the batch's deliveries again under their own ids, attempt 0, due
-- now, ordered in the replay chains of their keys (@chains are chain
-- values, hookrelay.ReplayChain, for the ordering_key column): chained by id like live deliveries, but
-- apart from them (they neither wait for nor hold back the live deliveries
-- of their key). A delivery still pending (live, or a dead letter retried
-- meanwhile) is left as it is and not returned, and so is every one of a
-- deleted endpoint. An endpoint with "ordering": "none" gets them unordered,
-- as it gets its live deliveries.
INSERT INTO deliveries (id, queue, endpoint_id, ordering_key, ordered, message_id,
                        message_received_at, attempt, visible_at)
SELECT x.id, x.queue, @endpoint_id::bigint, x.ordering_key,
       coalesce((SELECT e.ordering = 'key' FROM endpoints e WHERE e.id = @endpoint_id::bigint), true),
       x.message_id,
       x.message_received_at, 0, now()
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(queues)::smallint[]) AS queue,
             unnest(sqlc.arg(chains)::text[]) AS ordering_key,
             unnest(sqlc.arg(message_ids)::bigint[]) AS message_id,
             unnest(sqlc.arg(message_received_ats)::timestamptz[]) AS message_received_at) x
WHERE EXISTS (SELECT 1 FROM endpoints e WHERE e.id = @endpoint_id::bigint AND e.status <> 'deleted')
ORDER BY x.id
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: DeadLetterDeleteByIDs :execrows
-- The dead letters a replay queued again: like a retry, they leave
-- dead_letters as their delivery goes back to the queue.
DELETE FROM dead_letters WHERE id = ANY(sqlc.arg(ids)::bigint[]);

-- name: DeliveryCountByIDs :one
-- How many of these deliveries are still queued (a replay's previous batch).
SELECT count(*)::bigint FROM deliveries WHERE id = ANY(sqlc.arg(ids)::bigint[]);

-- name: ReplayChainTails :many
-- The highest id queued in each of an endpoint's chains (@chains are chain
-- values), 0 for an empty chain: one backward probe of deliveries_chain_idx
-- each. A replay batch queues no delivery below its chain's tail (see
-- db.ReplayStep).
SELECT c.chain::text AS chain,
       coalesce((SELECT d.id FROM deliveries d
                 WHERE d.endpoint_id = @endpoint_id::bigint AND d.ordering_key = c.chain AND d.ordered
                 ORDER BY d.endpoint_id DESC, d.ordering_key DESC, d.id DESC LIMIT 1), 0)::bigint AS tail
FROM unnest(sqlc.arg(chains)::text[]) AS c(chain);

-- name: ReplayQueuedIDs :many
-- Which of these deliveries are queued now in a replay chain (their chain,
-- the ordering_key column, begins with @mark, hookrelay.ReplayChainMark):
-- another replay's, not sent yet. A replay batch waits for them rather
-- than count them as failed (see db.ReplayStep). The chain tails cannot
-- tell: to an endpoint with "ordering": "none" replayed rows are
-- unordered, outside deliveries_chain_idx. One probe of the primary key
-- per delivery.
SELECT d.id FROM deliveries d
WHERE d.id = ANY(sqlc.arg(ids)::bigint[]) AND starts_with(d.ordering_key, sqlc.arg(mark)::text);

-- name: ReplayListByEndpoint :many
-- An endpoint's latest replays, newest first (replays_endpoint_idx).
SELECT * FROM replays WHERE endpoint_id = @endpoint_id ORDER BY id DESC LIMIT @lim;
