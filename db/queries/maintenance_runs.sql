-- name: MaintenanceRunList :many
SELECT job, last_run_at, detail FROM maintenance_runs
WHERE job LIKE sqlc.arg(prefix)::text || '%' ORDER BY job;

-- name: MaintenanceRunSet :exec
INSERT INTO maintenance_runs (job, last_run_at, detail)
VALUES (sqlc.arg(job), sqlc.arg(last_run_at), sqlc.arg(detail))
ON CONFLICT (job) DO UPDATE SET last_run_at = excluded.last_run_at, detail = excluded.detail;

-- name: MaintenanceRunDelete :exec
DELETE FROM maintenance_runs WHERE job = sqlc.arg(job);
