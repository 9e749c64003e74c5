-- +goose Up
-- Two functions nothing calls any more. The claim's three-argument walk
-- (00180) was kept by 00270 beside the four-argument one that passes over
-- skipped endpoints, for processes of the release before it; every process
-- now calls the four-argument one. hookrelay_message_deliveries (00130), one
-- message's deliveries, was replaced by the set form
-- hookrelay_messages_deliveries (00165, 00260). db/queries/functions.sql
-- holds the functions that remain.
DROP FUNCTION IF EXISTS deliveries_claim_walk(smallint, bigint, integer);
DROP FUNCTION IF EXISTS hookrelay_message_deliveries(bigint, timestamptz, text);

-- +goose Down
-- The two functions as 00180 and 00130 created them.
-- +goose StatementBegin
CREATE FUNCTION deliveries_claim_walk(q smallint, after bigint, per_queue integer)
RETURNS TABLE (endpoint_id bigint, turn integer, share integer)
LANGUAGE sql STABLE AS $fn$
WITH RECURSIVE walk (endpoint_id, due, wrapped, steps, turns) AS (
    (SELECT f.endpoint_id, f.visible_at <= now(), f.wrapped, 1, (f.visible_at <= now())::integer
     FROM (
         (SELECT d.endpoint_id, d.visible_at, false AS wrapped FROM deliveries d
          WHERE d.queue = q AND d.endpoint_id > after AND d.visible_at < 'infinity'
          ORDER BY d.endpoint_id, d.visible_at LIMIT 1)
         UNION ALL
         (SELECT d.endpoint_id, d.visible_at, true FROM deliveries d
          WHERE d.queue = q AND d.endpoint_id <= after AND d.visible_at < 'infinity'
          ORDER BY d.endpoint_id, d.visible_at LIMIT 1)
     ) f
     LIMIT 1)
  UNION ALL
    SELECT nx.endpoint_id, nx.visible_at <= now(), nx.wrapped, w.steps + 1,
           w.turns + (nx.visible_at <= now())::integer
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT f.endpoint_id, f.visible_at, f.wrapped FROM (
            (SELECT d.endpoint_id, d.visible_at, w.wrapped FROM deliveries d
             WHERE d.queue = q AND d.endpoint_id > w.endpoint_id AND d.visible_at < 'infinity'
               AND (NOT w.wrapped OR d.endpoint_id <= after)
             ORDER BY d.endpoint_id, d.visible_at LIMIT 1)
            UNION ALL
            (SELECT d.endpoint_id, d.visible_at, true FROM deliveries d
             WHERE NOT w.wrapped AND d.queue = q AND d.endpoint_id <= after AND d.visible_at < 'infinity'
             ORDER BY d.endpoint_id, d.visible_at LIMIT 1)
        ) f
        LIMIT 1
    ) nx
    WHERE w.turns < per_queue AND w.steps < 8 * per_queue
)
SELECT w.endpoint_id, w.turns AS turn,
       ((per_queue + max(w.turns) OVER () - 1) / max(w.turns) OVER ())::integer AS share
FROM walk w
WHERE w.due
$fn$;

-- +goose StatementEnd

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
