-- Stat samples for the dashboard charts, taken by the maintenance role.

-- name: StatWindowPlan :exec
-- Settings for the window counts that follow in the same transaction. They
-- read ~10 s of an append-only day partition through its BRIN index. A
-- partition without statistics (autovacuum has not analyzed it yet, or is
-- off) makes the planner take that for a scan of the whole day, which grows
-- with the day and holds the cluster's xmin horizon as long as it runs
-- (dead space builds up in the hot queue meanwhile). Without sequential and
-- plain index scans the BRIN bitmap is the cheapest plan left; with statistics it is the
-- planner's choice anyway. No parallel workers for a few thousand rows, and
-- no JIT: without statistics the estimates pass jit_above_cost, and compiling
-- would cost far more CPU than the window's read.
SELECT set_config('enable_seqscan', 'off', true),
       set_config('enable_indexscan', 'off', true),
       set_config('enable_indexonlyscan', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true),
       set_config('jit', 'off', true);

-- name: StatSampleInsert :exec
INSERT INTO stat_samples (sampled_at, data) VALUES (sqlc.arg(sampled_at), sqlc.arg(data))
ON CONFLICT (sampled_at) DO NOTHING;

-- name: StatSampleTrim :execrows
DELETE FROM stat_samples WHERE sampled_at < sqlc.arg(before)::timestamptz;

-- name: StatSampleListSince :many
SELECT sampled_at, data FROM stat_samples
WHERE sampled_at >= sqlc.arg(since)::timestamptz ORDER BY sampled_at;

-- name: StatSampleGetLatest :one
SELECT sampled_at, data FROM stat_samples ORDER BY sampled_at DESC LIMIT 1;
