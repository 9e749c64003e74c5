-- name: DispatcherRegister :one
INSERT INTO dispatchers (hostname, pid) VALUES (sqlc.arg(hostname), sqlc.arg(pid))
RETURNING id;

-- name: DispatcherHeartbeat :one
-- Records a heartbeat and returns how many dispatchers are live (heartbeat
-- within @live_within, not stopped), this one included.
WITH hb AS (
    UPDATE dispatchers SET heartbeat_at = now()
    WHERE id = sqlc.arg(id)::bigint AND stopped_at IS NULL
    RETURNING id
)
SELECT (SELECT count(*) FROM hb)::integer AS me,
       (SELECT count(*) FROM dispatchers d
        WHERE d.stopped_at IS NULL AND d.id <> sqlc.arg(id)::bigint
          AND d.heartbeat_at > now() - sqlc.arg(live_within)::interval)::integer AS others;

-- name: DispatcherStop :exec
UPDATE dispatchers SET stopped_at = now() WHERE id = sqlc.arg(id)::bigint;

-- name: DispatcherPrune :execrows
-- Removes rows of dispatchers stopped or silent for longer than @older_than.
DELETE FROM dispatchers
WHERE coalesce(stopped_at, heartbeat_at) < now() - sqlc.arg(older_than)::interval;
