-- name: PartitionEnsure :one
-- hookrelay_ensure_partitions is defined in functions.sql.
SELECT hookrelay_ensure_partitions(sqlc.arg(from_day)::date, sqlc.arg(days)::integer)::integer;

-- name: PartitionList :many
-- Every day table of the partitioned history tables, attached or left detached
-- by an interrupted run, with its day and size, and its heap's pages against
-- those the last VACUUM (or ANALYZE) found all-visible.
SELECT c.relname::text AS name,
       substring(c.relname FROM '^(.*)_p[0-9]{8}$')::text AS parent,
       to_date(right(c.relname, 8), 'YYYYMMDD')::date AS day,
       (i.inhrelid IS NOT NULL)::boolean AS attached,
       coalesce(i.inhdetachpending, false)::boolean AS detach_pending,
       pg_total_relation_size(c.oid)::bigint AS bytes,
       (pg_relation_size(c.oid) / current_setting('block_size')::bigint)::bigint AS heap_pages,
       c.relallvisible::bigint AS all_visible_pages
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
LEFT JOIN pg_catalog.pg_inherits i ON i.inhrelid = c.oid
WHERE c.relkind = 'r'
  AND c.relname ~ '^(messages|delivery_attempts|idempotency_keys|carrier_refusals)_p[0-9]{8}$'
ORDER BY day, name;

-- name: PartitionDetachStatement :one
SELECT format('ALTER TABLE %I DETACH PARTITION %I CONCURRENTLY',
              sqlc.arg(parent)::text, sqlc.arg(child)::text)::text AS stmt;

-- name: PartitionFinalizeStatement :one
SELECT format('ALTER TABLE %I DETACH PARTITION %I FINALIZE',
              sqlc.arg(parent)::text, sqlc.arg(child)::text)::text AS stmt;

-- name: PartitionDropStatement :one
SELECT format('DROP TABLE IF EXISTS %I', sqlc.arg(child)::text)::text AS stmt;

-- name: PartitionStats :many
-- The attached day partitions of the history with what the maintenance
-- role's ANALYZE policy needs: live rows, rows inserted (or changed) since the
-- last ANALYZE, the row count the planner works from (reltuples: -1 never
-- counted), and whether the partition has column statistics at all.
SELECT c.relname::text AS name,
       substring(c.relname FROM '^(.*)_p[0-9]{8}$')::text AS parent,
       s.n_live_tup::bigint AS live,
       s.n_mod_since_analyze::bigint AS modified, c.reltuples::float8 AS planned,
       EXISTS (SELECT 1 FROM pg_catalog.pg_stats st
               WHERE st.schemaname = s.schemaname AND st.tablename = s.relname)::boolean AS has_stats
FROM pg_catalog.pg_stat_user_tables s
JOIN pg_catalog.pg_class c ON c.oid = s.relid
JOIN pg_catalog.pg_inherits i ON i.inhrelid = c.oid
WHERE s.schemaname = current_schema()
  AND s.relname ~ '^(messages|delivery_attempts|idempotency_keys|carrier_refusals)_p[0-9]{8}$'
ORDER BY c.relname;

-- name: PartitionIndexesLockTimeout :exec
-- A lock_timeout for the rest of the transaction.
SELECT set_config('lock_timeout', sqlc.arg(timeout)::text, true);

-- name: PartitionIndexesSummarize :one
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
