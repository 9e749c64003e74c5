-- Maintenance role: leadership lock, day partitions, retention, hot-table vacuum.
-- DDL and VACUUM take identifiers, which cannot be bound parameters: the
-- *Statement queries let the server quote them (format %I) and the caller runs
-- the returned text on its dedicated session, outside any transaction.

-- name: MaintenanceTryLock :one
SELECT pg_try_advisory_lock(sqlc.arg(key)::bigint)::boolean AS locked;

-- name: MaintenanceUnlock :one
SELECT pg_advisory_unlock(sqlc.arg(key)::bigint)::boolean AS unlocked;

-- name: MaintenanceBackendPID :one
SELECT pg_backend_pid()::integer AS pid;

-- name: PartitionTables :many
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
  AND c.relname ~ '^(messages|delivery_attempts|idempotency_keys)_p[0-9]{8}$'
ORDER BY day, name;

-- name: PartitionDetachStatement :one
SELECT format('ALTER TABLE %I DETACH PARTITION %I CONCURRENTLY',
              sqlc.arg(parent)::text, sqlc.arg(child)::text)::text AS stmt;

-- name: PartitionFinalizeStatement :one
SELECT format('ALTER TABLE %I DETACH PARTITION %I FINALIZE',
              sqlc.arg(parent)::text, sqlc.arg(child)::text)::text AS stmt;

-- name: PartitionDropStatement :one
SELECT format('DROP TABLE IF EXISTS %I', sqlc.arg(child)::text)::text AS stmt;

-- name: VacuumStatement :one
-- A hot table's VACUUM: the heap pass alone, or a full one that reads the
-- indexes in this backend only (PARALLEL 0; see Session.Vacuum).
SELECT format(CASE WHEN sqlc.arg(heap_only)::boolean THEN 'VACUUM (INDEX_CLEANUP OFF) %I' ELSE 'VACUUM (PARALLEL 0) %I' END,
              sqlc.arg(table_name)::text)::text AS stmt;

-- name: VacuumFreezeStatement :one
SELECT format('VACUUM (FREEZE) %I', sqlc.arg(table_name)::text)::text AS stmt;

-- name: VacuumFreezeSettings :exec
-- Session settings for a closed day's VACUUM (FREEZE): the server's
-- autovacuum cost settings (-1: the plain VACUUM's), no statement timeout.
SELECT set_config('vacuum_cost_delay',
                  CASE current_setting('autovacuum_vacuum_cost_delay') WHEN '-1' THEN current_setting('vacuum_cost_delay')
                       ELSE current_setting('autovacuum_vacuum_cost_delay') END, false),
       set_config('vacuum_cost_limit',
                  CASE current_setting('autovacuum_vacuum_cost_limit') WHEN '-1' THEN current_setting('vacuum_cost_limit')
                       ELSE current_setting('autovacuum_vacuum_cost_limit') END, false),
       set_config('statement_timeout', '0', false);

-- name: RetentionDeadLettersDiscard :execrows
-- Dead letters whose message is past retention are history too: they go
-- before their message's partition is dropped.
DELETE FROM dead_letters WHERE message_received_at < sqlc.arg(before)::timestamptz;

-- name: RetentionPendingDeliveries :one
-- Pending deliveries still referencing messages of [from, to): they pin the day.
SELECT count(*)::bigint AS n FROM deliveries
WHERE message_received_at >= sqlc.arg(from_time)::timestamptz
  AND message_received_at < sqlc.arg(to_time)::timestamptz;

-- name: MaintenanceRunList :many
SELECT job, last_run_at, detail FROM maintenance_runs
WHERE job LIKE sqlc.arg(prefix)::text || '%' ORDER BY job;

-- name: MaintenanceRunSet :exec
INSERT INTO maintenance_runs (job, last_run_at, detail)
VALUES (sqlc.arg(job), sqlc.arg(last_run_at), sqlc.arg(detail))
ON CONFLICT (job) DO UPDATE SET last_run_at = excluded.last_run_at, detail = excluded.detail;

-- name: MaintenanceRunDelete :exec
DELETE FROM maintenance_runs WHERE job = sqlc.arg(job);

-- name: HotTableStats :many
-- Live and dead tuples of the churning tables, for the vacuum policy, the
-- row count the planner works from (reltuples: -1 never counted), and the
-- rows deleted or updated since the statistics were reset (churn), and the
-- size of the heap (main fork).
SELECT s.relname::text AS name, s.n_live_tup::bigint AS live, s.n_dead_tup::bigint AS dead,
       c.reltuples::float8 AS planned, (s.n_tup_del + s.n_tup_upd)::bigint AS churned,
       pg_relation_size(c.oid)::bigint AS heap_bytes
FROM pg_catalog.pg_stat_user_tables s
JOIN pg_catalog.pg_class c ON c.oid = s.relid
WHERE s.schemaname = current_schema() AND s.relname = ANY (sqlc.arg(names)::text[]);

-- name: HotTupleBytes :many
-- The average size of a row of each churning table as stored (data from the
-- column statistics, null columns taking no room, plus the tuple header and
-- line pointer): what each dead row takes until it is pruned. Tables never
-- analyzed are missing.
SELECT tablename::text AS name, (sum(avg_width * (1 - null_frac)) + 28)::float8 AS tuple_bytes
FROM pg_catalog.pg_stats
WHERE schemaname = current_schema() AND tablename = ANY (sqlc.arg(names)::text[])
GROUP BY tablename;

-- name: HotIndexes :many
-- The indexes of the churning tables with their size and validity (an
-- interrupted REINDEX CONCURRENTLY leaves an invalid *_ccnew index behind).
SELECT ic.relname::text AS name, t.relname::text AS table_name,
       pg_relation_size(ic.oid)::bigint AS bytes,
       s.n_live_tup::bigint AS live,
       i.indisvalid::boolean AS valid
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
JOIN pg_catalog.pg_class t ON t.oid = i.indrelid
JOIN pg_catalog.pg_stat_user_tables s ON s.relid = t.oid
WHERE s.schemaname = current_schema() AND t.relname = ANY (sqlc.arg(names)::text[])
ORDER BY ic.relname;

-- name: HistoryPartitionStats :many
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
  AND s.relname ~ '^(messages|delivery_attempts|idempotency_keys)_p[0-9]{8}$'
ORDER BY c.relname;

-- name: AnalyzeStatement :one
SELECT format('ANALYZE %I', sqlc.arg(table_name)::text)::text AS stmt;

-- name: ReindexStatement :one
SELECT format('REINDEX INDEX CONCURRENTLY %I', sqlc.arg(index_name)::text)::text AS stmt;

-- name: DropIndexStatement :one
SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', sqlc.arg(index_name)::text)::text AS stmt;
