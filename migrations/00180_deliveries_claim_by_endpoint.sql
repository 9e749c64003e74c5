-- +goose Up
-- The claim takes due work of a logical queue fairly across endpoints
-- (DeliveryClaim, docs/dispatch.md "Fair claim"): it walks the endpoints that
-- have rows in the queue, one descent each, and takes each one's share of
-- its oldest due rows. The claim index is keyed for that walk: (queue,
-- endpoint_id, visible_at, id) in place of (queue, visible_at, id). It stays
-- one index (ingest pays one entry per row, as before) with the same
-- predicate, so parked rows stay out of it and the lease stays a HOT update.
--
-- A plain CREATE INDEX: it holds writes to the table for as long as it reads
-- the heap (the live backlog: a fraction of a second for a million rows).
DROP INDEX deliveries_claim_idx;
CREATE INDEX deliveries_claim_idx ON deliveries (queue, endpoint_id, visible_at, id)
    WHERE visible_at < 'infinity';

-- The endpoints a claim serves in logical queue q, starting after endpoint
-- "after" and wrapping round to it: a loose index scan of the claim index,
-- one descent per endpoint with unparked rows in q. The first entry of an
-- endpoint holds its earliest visible_at, so an endpoint whose rows all wait
-- (retries, held, circuit open) is passed at the cost of that descent. The
-- walk stops at per_queue endpoints with due rows, or after 8 * per_queue
-- endpoints: bounded by the claim's size, whatever the number of endpoints.
-- Returns the due ones in walk order (turn) with the rows each may give:
-- ceil(per_queue / endpoints returned).
--
-- A function only because sqlc cannot read a recursive query nested in a
-- LATERAL subquery; it is a single STABLE SQL SELECT, which the planner
-- inlines into the claim (each branch's "visible_at < 'infinity'" is the
-- index's predicate, which "visible_at <= now()" would not imply).
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

-- +goose Down
DROP FUNCTION deliveries_claim_walk(smallint, bigint, integer);
DROP INDEX deliveries_claim_idx;
CREATE INDEX deliveries_claim_idx ON deliveries (queue, visible_at, id)
    WHERE visible_at < 'infinity';
