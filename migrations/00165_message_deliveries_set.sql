-- +goose Up
-- hookrelay_messages_deliveries is hookrelay_message_deliveries (00130) for
-- a set of messages at once: every delivery of each message (mids[i],
-- received mats[i], key mkeys[i]), in the same states. The per-message
-- function finds a never-attempted delivery in the queue through
-- deliveries_chain_idx, one probe per endpoint, or by reading the whole
-- queue: a search page of 100 messages read the queue 100 times
-- (docs/benchmarks.md, "Search at 50 million messages": 1 ms a message with
-- 2,000 rows queued). Here the queue is read once for the whole set, and
-- the history is looked up message by message on its indexes as before.
-- +goose StatementBegin
CREATE FUNCTION hookrelay_messages_deliveries(mids bigint[], mats timestamptz[], mkeys text[])
RETURNS TABLE (message_id bigint, delivery_id bigint, endpoint_id bigint, state text,
               attempts integer, last_status integer, next_attempt_at timestamptz)
LANGUAGE sql STABLE AS $fn$
SELECT i.mid, i.id, i.endpoint_id,
       CASE WHEN p.id IS NOT NULL THEN 'pending'
            WHEN l.id IS NOT NULL THEN 'dead'
            WHEN la.outcome = 'success' THEN 'delivered'
            ELSE 'failed' END,
       coalesce(p.attempt, l.attempts, la.attempt, 0),
       coalesce(p.last_status, l.last_status, la.status_code),
       CASE WHEN p.id IS NOT NULL AND isfinite(greatest(p.visible_at, p.leased_until))
            THEN greatest(p.visible_at, p.leased_until) END
FROM (SELECT DISTINCT ON (u.mid, u.id) u.mid, u.mat, u.id, u.endpoint_id
      FROM (SELECT x.mid, x.mat, a.delivery_id AS id, a.endpoint_id
            FROM unnest(mids, mats) AS x(mid, mat)
            JOIN delivery_attempts a
              ON a.message_id = x.mid AND a.message_received_at = x.mat AND a.attempted_at >= x.mat
            UNION ALL
            SELECT x.mid, x.mat, dl.id, dl.endpoint_id
            FROM unnest(mids, mats) AS x(mid, mat)
            JOIN dead_letters dl ON dl.message_id = x.mid AND dl.message_received_at = x.mat
            UNION ALL
            SELECT d.message_id, d.message_received_at, d.id, d.endpoint_id
            FROM deliveries d
            WHERE d.ordered
              AND (d.message_id, d.message_received_at, d.ordering_key)
                  IN (SELECT * FROM unnest(mids, mats, mkeys))) u
      ORDER BY u.mid, u.id) i
LEFT JOIN deliveries p ON p.id = i.id
LEFT JOIN dead_letters l ON l.id = i.id
LEFT JOIN LATERAL (SELECT a.attempt, a.status_code, a.outcome FROM delivery_attempts a
                   WHERE a.delivery_id = i.id AND a.attempted_at >= i.mat
                   ORDER BY a.attempted_at DESC, a.attempt DESC LIMIT 1) la ON true
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION hookrelay_messages_deliveries(bigint[], timestamptz[], text[]);
