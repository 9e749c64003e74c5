-- Stat samples for the dashboard charts, taken by the maintenance role.

-- name: StatIngested :one
-- Callbacks received in [from, to) (BRIN on received_at), and the sequence's
-- high-water mark (ahead of the true count by up to CACHE 100 per session).
SELECT (SELECT count(*) FROM messages
        WHERE received_at >= sqlc.arg(from_time)::timestamptz
          AND received_at < sqlc.arg(to_time)::timestamptz)::bigint AS ingested,
       coalesce(pg_sequence_last_value('messages_id_seq'::regclass), 0)::bigint AS ingested_total;

-- name: StatWindowPlan :exec
-- Settings for the window counts that follow in the same transaction. They
-- read ~10 s of an append-only day partition through its BRIN index. A
-- partition without statistics (autovacuum has not analyzed it yet, or is
-- off) makes the planner take that for a scan of the whole day, which grows
-- with the day and holds the cluster's xmin horizon as long as it runs
-- (0.15 -> 0.6 s within ten minutes at 2,400 callbacks/s here, dead space in
-- the hot queue over 10 % while it did). Without sequential and plain index
-- scans the BRIN bitmap is the cheapest plan left; with statistics it is the
-- planner's choice anyway. No parallel workers for a few thousand rows, and
-- no JIT: without statistics the estimates pass jit_above_cost, and compiling
-- took 13 ms of CPU per query for a 10-s window read in 80.
SELECT set_config('enable_seqscan', 'off', true),
       set_config('enable_indexscan', 'off', true),
       set_config('enable_indexonlyscan', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true),
       set_config('jit', 'off', true);

-- name: HistoryIndexesSummarize :one
-- Summarizes the block ranges added since the last summary to the BRIN
-- indexes of the messages and delivery_attempts partitions of the days of
-- from_time and to_time (names as hookrelay_ensure_partitions makes them).
-- Ranges nobody summarized are read whole by every BRIN scan, and only a
-- VACUUM of the partition summarizes them: an insert-driven autovacuum comes
-- after 20 % growth, so the unsummarized tail of the open day reaches
-- millions of rows, all read by every stat sample. Summarizing the new ranges
-- reads only the pages added since the last call. It takes SHARE UPDATE
-- EXCLUSIVE on the partition, as a VACUUM or ANALYZE does: a partition on
-- which another session holds a lock in a conflicting mode (an autovacuum
-- VACUUM of a large day runs for minutes) is left for the next call, and the
-- caller sets a short lock_timeout for a lock taken between that check and
-- the summary, so that it never waits (nor gets an autovacuum of the
-- partition cancelled by waiting for it).
SELECT coalesce(sum(brin_summarize_new_values(i.indexrelid)), 0)::bigint AS ranges
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
JOIN pg_catalog.pg_am a ON a.oid = c.relam AND a.amname = 'brin'
WHERE i.indrelid IN (
    SELECT to_regclass(t.name || '_p' || to_char(d.day, 'YYYYMMDD'))
    FROM unnest(ARRAY['messages', 'delivery_attempts']) AS t(name)
    CROSS JOIN unnest(ARRAY[(sqlc.arg(from_time)::timestamptz AT TIME ZONE 'UTC')::date,
                            (sqlc.arg(to_time)::timestamptz AT TIME ZONE 'UTC')::date]) AS d(day))
  AND NOT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l
    WHERE l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
      AND l.relation = i.indrelid AND l.granted AND l.pid <> pg_backend_pid()
      AND l.mode IN ('ShareUpdateExclusiveLock', 'ShareLock', 'ShareRowExclusiveLock',
                     'ExclusiveLock', 'AccessExclusiveLock'));

-- name: HistoryIndexesLockTimeout :exec
-- A lock_timeout for the rest of the transaction.
SELECT set_config('lock_timeout', sqlc.arg(timeout)::text, true);

-- name: StatAttempts :many
-- Delivery outcomes in [from, to) (BRIN on attempted_at) as a histogram: one
-- row per outcome class and bucket of the successful attempts' end-to-end
-- latency (received → attempt started + its latency). Bucket b holds
-- latencies in [1.01^b, 1.01^(b+1)) ms, so percentiles merged from the
-- buckets of several windows are within 0.5 % of the exact ones; failed
-- attempts are counted in bucket 0 of success = false.
SELECT (outcome = 'success')::bool AS success,
       (CASE WHEN outcome = 'success'
             THEN floor(ln(greatest(e2e_ms, 0.001)) / ln(1.01))
             ELSE 0 END)::integer AS bucket,
       count(*)::bigint AS n
FROM (SELECT outcome,
             extract(epoch FROM attempted_at - message_received_at)::float8 * 1000 + latency_ms AS e2e_ms
      FROM delivery_attempts
      WHERE attempted_at >= sqlc.arg(from_time)::timestamptz
        AND attempted_at < sqlc.arg(to_time)::timestamptz) a
GROUP BY 1, 2;

-- name: StatBacklog :many
-- Pending deliveries per logical queue and the oldest message still pending.
SELECT queue::integer AS queue, count(*)::bigint AS pending,
       min(message_received_at)::timestamptz AS oldest
FROM deliveries GROUP BY queue;

-- name: StatBacklogEstimate :one
-- The statistics collector's live row count of deliveries (no scan), and the
-- oldest message among the lowest ids (ids follow creation; cheap on the
-- primary key).
SELECT coalesce((SELECT n_live_tup FROM pg_catalog.pg_stat_user_tables
                 WHERE schemaname = current_schema() AND relname = 'deliveries'), 0)::bigint AS live,
       coalesce((SELECT extract(epoch FROM min(message_received_at)) FROM
           (SELECT message_received_at FROM deliveries ORDER BY id LIMIT 100) o), 0)::float8 AS oldest_unix;

-- name: StatBacklogSampled :many
-- Pending deliveries per logical queue in a block sample of percent % of the
-- table: the shares of a large backlog without reading all of it.
SELECT queue::integer AS queue, count(*)::bigint AS pending
FROM deliveries TABLESAMPLE SYSTEM (sqlc.arg(percent)::float8) GROUP BY queue;

-- name: StatDeadLetters :one
SELECT count(*)::bigint AS n FROM dead_letters;

-- name: StatSampleInsert :exec
INSERT INTO stat_samples (sampled_at, data) VALUES (sqlc.arg(sampled_at), sqlc.arg(data))
ON CONFLICT (sampled_at) DO NOTHING;

-- name: StatSamplesTrim :execrows
DELETE FROM stat_samples WHERE sampled_at < sqlc.arg(before)::timestamptz;

-- name: StatSamplesSince :many
SELECT sampled_at, data FROM stat_samples
WHERE sampled_at >= sqlc.arg(since)::timestamptz ORDER BY sampled_at;

-- name: StatSampleLatest :one
SELECT sampled_at, data FROM stat_samples ORDER BY sampled_at DESC LIMIT 1;
