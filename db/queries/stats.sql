-- Stat samples for the dashboard charts, taken by the maintenance role.

-- name: StatIngested :one
-- Callbacks received in [from, to) (BRIN on received_at), and the sequence's
-- high-water mark (ahead of the true count by up to CACHE 100 per session).
SELECT (SELECT count(*) FROM messages
        WHERE received_at >= sqlc.arg(from_time)::timestamptz
          AND received_at < sqlc.arg(to_time)::timestamptz)::bigint AS ingested,
       coalesce(pg_sequence_last_value('messages_id_seq'::regclass), 0)::bigint AS ingested_total;

-- name: StatAttempts :one
-- Delivery outcomes in [from, to) (BRIN on attempted_at) and the end-to-end
-- latency of the successful ones: received → attempt started + its latency.
SELECT count(*) FILTER (WHERE outcome = 'success')::bigint AS delivered,
       count(*) FILTER (WHERE outcome <> 'success')::bigint AS failed,
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY e2e_ms) FILTER (WHERE outcome = 'success'), 0)::float8 AS e2e_p50_ms,
       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY e2e_ms) FILTER (WHERE outcome = 'success'), 0)::float8 AS e2e_p99_ms
FROM (SELECT outcome,
             extract(epoch FROM attempted_at - message_received_at) * 1000 + latency_ms AS e2e_ms
      FROM delivery_attempts
      WHERE attempted_at >= sqlc.arg(from_time)::timestamptz
        AND attempted_at < sqlc.arg(to_time)::timestamptz) a;

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
