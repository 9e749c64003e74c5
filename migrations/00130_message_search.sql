-- +goose Up
-- Message search (GET /v1/messages, the dashboard's search box) finds a
-- callback by its ordering key (the carrier's tracking number) and then
-- everything that became of it.
--
-- messages (ordering_key): the exact-key search, per day partition. An index
-- on the partitioned parent is created on every partition it has, and
-- ATTACH PARTITION (hookrelay_ensure_partitions) builds it on each new, empty
-- day. CREATE INDEX on a partitioned table cannot be CONCURRENTLY: it holds
-- SHARE on each partition while that partition's index is built, which
-- blocks the inserts into it for that time (on a large retention, build
-- each partition's index CONCURRENTLY first, then CREATE INDEX ON ONLY the
-- parent and ALTER INDEX ... ATTACH PARTITION each one; this plain form is
-- for installations whose history is still small).
CREATE INDEX messages_ordering_key_idx ON messages (ordering_key);

-- delivery_attempts (message_id): a message's delivered and failed
-- deliveries are known only from their attempts (the queue forgets them).
-- Message ids grow with time, so nearly every entry is added at the right
-- edge of the index. Same lock note as above.
CREATE INDEX delivery_attempts_message_idx ON delivery_attempts (message_id);

-- dead_letters (message_id): a message's dead deliveries.
CREATE INDEX dead_letters_message_idx ON dead_letters (message_id);

-- hookrelay_message_deliveries is every delivery of message (mid, mat) with
-- key mkey: found through its attempts, its dead letter, or (pending, never
-- attempted) its row in the queue, looked up per endpoint on
-- deliveries_chain_idx (the queue has no index on message_id: it is the hot
-- table, and every index costs each callback). state is pending (in the
-- queue), dead (a dead letter), delivered (its last attempt succeeded) or
-- failed (gone from the queue without success: its endpoint was deleted).
-- attempts and last_status are the queue row's or the dead letter's when
-- there is one, else the last attempt's; next_attempt_at is when a pending
-- delivery is due (its lease's end while in flight; NULL when parked).
-- +goose StatementBegin
CREATE FUNCTION hookrelay_message_deliveries(mid bigint, mat timestamptz, mkey text)
RETURNS TABLE (delivery_id bigint, endpoint_id bigint, state text, attempts integer,
               last_status integer, next_attempt_at timestamptz)
LANGUAGE sql STABLE AS $fn$
SELECT i.id, i.endpoint_id,
       CASE WHEN p.id IS NOT NULL THEN 'pending'
            WHEN l.id IS NOT NULL THEN 'dead'
            WHEN la.outcome = 'success' THEN 'delivered'
            ELSE 'failed' END,
       coalesce(p.attempt, l.attempts, la.attempt, 0),
       coalesce(p.last_status, l.last_status, la.status_code),
       CASE WHEN p.id IS NOT NULL AND isfinite(greatest(p.visible_at, p.leased_until))
            THEN greatest(p.visible_at, p.leased_until) END
FROM (SELECT DISTINCT ON (x.id) x.id, x.endpoint_id
      FROM (SELECT a.delivery_id AS id, a.endpoint_id FROM delivery_attempts a
            WHERE a.message_id = mid AND a.message_received_at = mat AND a.attempted_at >= mat
            UNION ALL
            SELECT dl.id, dl.endpoint_id FROM dead_letters dl
            WHERE dl.message_id = mid AND dl.message_received_at = mat
            UNION ALL
            SELECT d.id, d.endpoint_id FROM endpoints e
            JOIN deliveries d ON d.endpoint_id = e.id AND d.ordering_key = mkey AND d.ordered
            WHERE d.message_id = mid AND d.message_received_at = mat) x
      ORDER BY x.id) i
LEFT JOIN deliveries p ON p.id = i.id
LEFT JOIN dead_letters l ON l.id = i.id
LEFT JOIN LATERAL (SELECT a.attempt, a.status_code, a.outcome FROM delivery_attempts a
                   WHERE a.delivery_id = i.id AND a.attempted_at >= mat
                   ORDER BY a.attempted_at DESC, a.attempt DESC LIMIT 1) la ON true
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION hookrelay_message_deliveries(bigint, timestamptz, text);
DROP INDEX dead_letters_message_idx;
DROP INDEX delivery_attempts_message_idx;
DROP INDEX messages_ordering_key_idx;
