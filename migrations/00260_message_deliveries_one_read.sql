-- +goose Up
-- hookrelay_messages_deliveries (00165) read a message's attempts twice:
-- once through delivery_attempts_message_idx to find its deliveries, and
-- again, delivery by delivery, through delivery_attempts_delivery_idx for
-- each one's last attempt. delivery_attempts is partitioned by the day of
-- the attempt, so each read probes every day partition since the message
-- arrived: a search by tracking number over a week (7 messages, the oldest
-- 7 days back) made ~2 × 7 × 4.5 index descents of the history, most of them
-- finding nothing, and on a history larger than memory each descent is a
-- page read. Here the attempts are read once (the first way) and each
-- delivery's last attempt is taken from those rows: the attempts of a
-- delivery are those of its message with its delivery id, so the result is
-- the same.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookrelay_messages_deliveries(mids bigint[], mats timestamptz[], mkeys text[])
RETURNS TABLE (message_id bigint, delivery_id bigint, endpoint_id bigint, state text,
               attempts integer, last_status integer, next_attempt_at timestamptz)
LANGUAGE sql STABLE AS $fn$
WITH att AS MATERIALIZED (
    SELECT x.mid, x.mat, a.delivery_id, a.endpoint_id, a.attempt, a.status_code, a.outcome, a.attempted_at
    FROM unnest(mids, mats) AS x(mid, mat)
    JOIN delivery_attempts a
      ON a.message_id = x.mid AND a.message_received_at = x.mat AND a.attempted_at >= x.mat
),
la AS (
    SELECT DISTINCT ON (att.delivery_id) att.delivery_id, att.attempt, att.status_code, att.outcome
    FROM att
    ORDER BY att.delivery_id, att.attempted_at DESC, att.attempt DESC
)
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
      FROM (SELECT att.mid, att.mat, att.delivery_id AS id, att.endpoint_id
            FROM att
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
LEFT JOIN la ON la.delivery_id = i.id
$fn$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookrelay_messages_deliveries(mids bigint[], mats timestamptz[], mkeys text[])
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
