-- +goose Up
-- The fair claim's walk passes the endpoints the claiming dispatcher names
-- in skip: those whose max_in_flight it has in flight already (a slow
-- endpoint with a backlog). Their rows would only be claimed to step aside
-- (released without an attempt, a lease and a release each): with an
-- endpoint answering in 2 s and 100,000 rows queued, every claim took some of
-- them in every queue. A skipped endpoint is passed like one whose rows all
-- wait (one descent, counted in the walk's 8 × per_queue steps). A NULL
-- skip passes nobody over.
-- A new function beside the three-argument one, which processes still
-- running the previous release call until they are replaced; a later
-- migration drops it.
-- +goose StatementBegin
CREATE FUNCTION deliveries_claim_walk(q smallint, after bigint, per_queue integer, skip bigint[])
RETURNS TABLE (endpoint_id bigint, turn integer, share integer)
LANGUAGE sql STABLE AS $fn$
WITH RECURSIVE walk (endpoint_id, due, wrapped, steps, turns) AS (
    (SELECT f.endpoint_id, f.due, f.wrapped, 1, f.due::integer
     FROM (SELECT g.endpoint_id, g.visible_at <= now() AND g.endpoint_id <> ALL (coalesce(skip, '{}')) AS due, g.wrapped FROM (
         (SELECT d.endpoint_id, d.visible_at, false AS wrapped FROM deliveries d
          WHERE d.queue = q AND d.endpoint_id > after AND d.visible_at < 'infinity'
          ORDER BY d.endpoint_id, d.visible_at LIMIT 1)
         UNION ALL
         (SELECT d.endpoint_id, d.visible_at, true FROM deliveries d
          WHERE d.queue = q AND d.endpoint_id <= after AND d.visible_at < 'infinity'
          ORDER BY d.endpoint_id, d.visible_at LIMIT 1)
     ) g LIMIT 1) f)
  UNION ALL
    SELECT nx.endpoint_id, nx.due, nx.wrapped, w.steps + 1, w.turns + nx.due::integer
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT f.endpoint_id, f.visible_at <= now() AND f.endpoint_id <> ALL (coalesce(skip, '{}')) AS due, f.wrapped FROM (
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

-- +goose Down
DROP FUNCTION deliveries_claim_walk(smallint, bigint, integer, bigint[]);
