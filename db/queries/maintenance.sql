-- Maintenance role: leadership lock, day partitions, retention, hot-table vacuum.
-- DDL and VACUUM take identifiers, which cannot be bound parameters: the
-- *Statement queries let the server quote them (format %I) and the caller runs
-- the returned text on its dedicated session, outside any transaction.

-- name: MaintenanceTryLock :one
SELECT pg_try_advisory_lock(sqlc.arg(key)::bigint)::boolean AS locked;

-- name: MaintenanceUnlock :one
SELECT pg_advisory_unlock(sqlc.arg(key)::bigint)::boolean AS unlocked;

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

-- name: AnalyzeStatement :one
SELECT format('ANALYZE %I', sqlc.arg(table_name)::text)::text AS stmt;

-- name: ReindexStatement :one
SELECT format('REINDEX INDEX CONCURRENTLY %I', sqlc.arg(index_name)::text)::text AS stmt;

-- name: DropIndexStatement :one
SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', sqlc.arg(index_name)::text)::text AS stmt;

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
