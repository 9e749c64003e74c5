-- name: QueueLeaseEnsure :exec
-- Creates the lease rows of logical queues 0..@queues-1.
INSERT INTO queue_leases (queue)
SELECT q::smallint FROM generate_series(0, sqlc.arg(queues)::integer - 1) AS q
ON CONFLICT (queue) DO NOTHING;

-- name: QueueLeaseRenew :many
-- Extends every lease @owner still holds and returns them.
UPDATE queue_leases SET expires_at = now() + sqlc.arg(lease)::interval
WHERE owner = sqlc.arg(owner)::bigint AND queue < sqlc.arg(queues)::integer
RETURNING queue::integer AS queue, epoch;

-- name: QueueLeaseRelease :execrows
-- Gives up @n of @owner's leases (the highest queues), or all when @n < 0.
UPDATE queue_leases SET owner = NULL, expires_at = '-infinity', epoch = epoch + 1
WHERE queue IN (
    SELECT l.queue FROM queue_leases l
    WHERE l.owner = sqlc.arg(owner)::bigint
    ORDER BY l.queue DESC
    LIMIT CASE WHEN sqlc.arg(n)::integer < 0 THEN NULL ELSE sqlc.arg(n)::integer END
    FOR UPDATE
);

-- name: QueueLeaseAcquire :many
-- Takes up to @n leases for @owner that are free, expired, or held by a
-- dispatcher that has not heartbeaten within @live_within (dead or stopped).
UPDATE queue_leases SET owner = sqlc.arg(owner)::bigint, epoch = epoch + 1,
    expires_at = now() + sqlc.arg(lease)::interval
WHERE queue IN (
    SELECT l.queue FROM queue_leases l
    WHERE (l.owner IS NULL OR l.expires_at < now()
           OR NOT EXISTS (SELECT 1 FROM dispatchers d
                          WHERE d.id = l.owner AND d.stopped_at IS NULL
                            AND d.heartbeat_at > now() - sqlc.arg(live_within)::interval))
      AND l.queue < sqlc.arg(queues)::integer
    ORDER BY l.expires_at, l.queue
    LIMIT sqlc.arg(n)::integer
    FOR UPDATE SKIP LOCKED
)
RETURNING queue::integer AS queue, epoch;
