-- The server's own catalogs and statistics, for the health page and estimates.

-- name: HealthTables :many
SELECT s.relname::text AS name,
       pg_table_size(s.relid)::bigint AS table_bytes,
       pg_indexes_size(s.relid)::bigint AS index_bytes,
       s.n_live_tup::bigint AS live,
       s.n_dead_tup::bigint AS dead,
       s.last_vacuum, s.last_autovacuum,
       s.vacuum_count::bigint AS vacuum_count,
       s.autovacuum_count::bigint AS autovacuum_count
FROM pg_catalog.pg_stat_user_tables s
WHERE s.schemaname = current_schema() AND s.relname = ANY (sqlc.arg(names)::text[])
ORDER BY s.relname;

-- name: HealthActivity :one
-- Connection budget, idle-in-transaction sessions and the oldest transaction
-- and snapshot (backend_xmin) in the whole cluster, leaving out this session;
-- and whether the server runs autovacuum at all.
SELECT current_setting('autovacuum')::boolean AS autovacuum,
       count(*) FILTER (WHERE a.backend_type = 'client backend')::integer AS connections,
       current_setting('max_connections')::integer AS max_connections,
       count(*) FILTER (WHERE a.state LIKE 'idle in transaction%')::integer AS idle_in_transaction,
       coalesce(extract(epoch FROM max(now() - a.xact_start)
           FILTER (WHERE a.backend_type = 'client backend')), 0)::float8 AS oldest_xact_seconds,
       count(*) FILTER (WHERE a.backend_type = 'client backend'
           AND a.xact_start < now() - make_interval(secs => sqlc.arg(long_seconds)::float8))::integer AS long_transactions,
       coalesce(max(age(a.backend_xmin)), 0)::integer AS oldest_xmin_age,
       (SELECT count(*) FROM pg_catalog.pg_prepared_xacts)::integer AS prepared_xacts,
       (SELECT coalesce(max(age(p.transaction)), 0) FROM pg_catalog.pg_prepared_xacts p)::integer AS oldest_prepared_xact_age
FROM pg_catalog.pg_stat_activity a
WHERE a.pid <> pg_backend_pid();

-- name: HealthSessions :many
-- Sessions worth an operator's look: idle in a transaction, or in a
-- transaction older than the threshold. Oldest first. same_database: the
-- session is in this database, so its snapshot holds back the VACUUMs of
-- hookrelay's tables; a session of another database holds back only those
-- of the shared catalogs.
SELECT a.pid::integer AS pid,
       coalesce(a.datname, '')::text AS database,
       (a.datid IS NOT DISTINCT FROM (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()))::boolean AS same_database,
       coalesce(a.usename, '')::text AS username,
       coalesce(a.application_name, '')::text AS application_name,
       coalesce(host(a.client_addr), '')::text AS client_addr,
       coalesce(a.state, '')::text AS state,
       a.xact_start,
       coalesce(extract(epoch FROM now() - a.xact_start), 0)::float8 AS xact_seconds,
       coalesce(age(a.backend_xmin), 0)::integer AS xmin_age,
       left(coalesce(a.query, ''), 200)::text AS query
FROM pg_catalog.pg_stat_activity a
WHERE a.pid <> pg_backend_pid()
  AND a.xact_start IS NOT NULL
  AND (a.state LIKE 'idle in transaction%'
       OR a.xact_start < now() - make_interval(secs => sqlc.arg(long_seconds)::float8))
ORDER BY a.xact_start
LIMIT 50;

-- name: HealthReplicationSlots :many
-- Replication slots that hold back vacuum through xmin or catalog_xmin.
SELECT slot_name::text AS slot_name,
       slot_type::text AS slot_type,
       active::boolean AS active,
       coalesce(age(xmin), 0)::integer AS xmin_age,
       coalesce(age(catalog_xmin), 0)::integer AS catalog_xmin_age
FROM pg_catalog.pg_replication_slots
WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL
ORDER BY slot_name;

-- name: HealthRowEstimate :one
-- Planner's row estimate for a table (sum over partitions), -1 when unknown.
SELECT COALESCE(sum(GREATEST(c.reltuples, 0)), -1)::bigint AS estimate
FROM pg_catalog.pg_class c
WHERE c.oid = to_regclass(@rel::text)
   OR c.oid IN (SELECT inhrelid FROM pg_catalog.pg_inherits WHERE inhparent = to_regclass(@rel::text));

-- name: ReplicaStatus :one
-- Whether this server is a standby, whether its WAL receiver is streaming,
-- and how far its replay is behind: 0 when it has replayed everything it
-- received while streaming (it is as current as the primary's last
-- commit), else the age of the last transaction it replayed.
SELECT pg_is_in_recovery() AS in_recovery,
       COALESCE((SELECT r.status = 'streaming' FROM pg_catalog.pg_stat_wal_receiver r), false)::boolean AS streaming,
       (CASE WHEN NOT pg_is_in_recovery() THEN 0
             WHEN COALESCE((SELECT r.status = 'streaming' FROM pg_catalog.pg_stat_wal_receiver r), false)
                  AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
             ELSE COALESCE(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()), -1)
        END)::float8 AS lag_seconds;
