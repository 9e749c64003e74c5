-- +goose Up
-- The fair claim's walk finds each endpoint's first claimable row (its head
-- in (visible_at, id) order, passing rows under a running lease), not its
-- first index entry. Two costs go with it (docs/dispatch.md "Fair claim"):
--
--  * An endpoint whose rows in the queue are all in flight took a turn of the
--    walk (its first entry is due) and then a share scan that found nothing;
--    at full load most endpoints of most queues are like that, and a claim
--    that is not full walks every queue. Its leased rows are now passed
--    inside the walk's index scan, without a descent of their own or a turn.
--  * An endpoint whose share is one row (as many endpoints due in the queue
--    as the queue's share of the claim) was found twice: once by the walk
--    and once by its share scan. The claim now locks the walk's head by its
--    tid; a share of more than one row scans from the head on.
--
-- The walk reads the heap for the lease, which the index does not hold; on a
-- queue table the visibility map is rarely set, so the index-only walk read
-- it too for each endpoint's first entry.
--
-- A new function beside the four-argument deliveries_claim_walk (00270),
-- which processes of the previous release call until they are replaced.
-- +goose StatementBegin
CREATE FUNCTION deliveries_claim_walk_heads(q smallint, after bigint, per_queue integer, skip bigint[])
RETURNS TABLE (endpoint_id bigint, turn integer, share integer,
               head tid, head_visible_at timestamptz, head_id bigint)
LANGUAGE sql STABLE AS $fn$
WITH RECURSIVE walk (endpoint_id, due, wrapped, steps, turns, head, head_visible_at, head_id) AS (
    (SELECT f.endpoint_id, f.due, f.wrapped, 1, f.due::integer, f.ctid, f.visible_at, f.id
     FROM (SELECT g.*, g.visible_at <= now() AND g.endpoint_id <> ALL (coalesce(skip, '{}')) AS due FROM (
         (SELECT d.endpoint_id, d.visible_at, d.id, d.ctid, false AS wrapped FROM deliveries d
          WHERE d.queue = q AND d.endpoint_id > after AND d.visible_at < 'infinity'
            AND (d.leased_until IS NULL OR d.leased_until <= now())
          ORDER BY d.endpoint_id, d.visible_at, d.id LIMIT 1)
         UNION ALL
         (SELECT d.endpoint_id, d.visible_at, d.id, d.ctid, true FROM deliveries d
          WHERE d.queue = q AND d.endpoint_id <= after AND d.visible_at < 'infinity'
            AND (d.leased_until IS NULL OR d.leased_until <= now())
          ORDER BY d.endpoint_id, d.visible_at, d.id LIMIT 1)
     ) g LIMIT 1) f)
  UNION ALL
    SELECT nx.endpoint_id, nx.due, nx.wrapped, w.steps + 1, w.turns + nx.due::integer,
           nx.ctid, nx.visible_at, nx.id
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT f.*, f.visible_at <= now() AND f.endpoint_id <> ALL (coalesce(skip, '{}')) AS due FROM (
            (SELECT d.endpoint_id, d.visible_at, d.id, d.ctid, w.wrapped FROM deliveries d
             WHERE d.queue = q AND d.endpoint_id > w.endpoint_id AND d.visible_at < 'infinity'
               AND (d.leased_until IS NULL OR d.leased_until <= now())
               AND (NOT w.wrapped OR d.endpoint_id <= after)
             ORDER BY d.endpoint_id, d.visible_at, d.id LIMIT 1)
            UNION ALL
            (SELECT d.endpoint_id, d.visible_at, d.id, d.ctid, true FROM deliveries d
             WHERE NOT w.wrapped AND d.queue = q AND d.endpoint_id <= after AND d.visible_at < 'infinity'
               AND (d.leased_until IS NULL OR d.leased_until <= now())
             ORDER BY d.endpoint_id, d.visible_at, d.id LIMIT 1)
        ) f
        LIMIT 1
    ) nx
    WHERE w.turns < per_queue AND w.steps < 8 * per_queue
)
SELECT w.endpoint_id, w.turns AS turn,
       ((per_queue + max(w.turns) OVER () - 1) / max(w.turns) OVER ())::integer AS share,
       w.head, w.head_visible_at, w.head_id
FROM walk w
WHERE w.due
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION deliveries_claim_walk_heads(smallint, bigint, integer, bigint[]);
