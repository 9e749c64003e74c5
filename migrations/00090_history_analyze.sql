-- +goose Up
-- Autovacuum no longer ANALYZEs the history's day partitions; the maintenance
-- role does, while a day is small (maintenance/analyze.go).
--
-- Autovacuum ANALYZEs a table each time it has grown by a tenth: a day of
-- 600 million callbacks would be analyzed ~65 times, the late ones sampling
-- random pages of a table far larger than memory. An ANALYZE holds a
-- snapshot while it samples, and for that time no VACUUM in the cluster can
-- remove a row deleted after its start: in a 58-minute soak the one sample
-- of 669 whose queue dead space passed 10 % (27 %) came while autovacuum
-- analyzed the day's messages, 5 million rows in 7 GB, for 0.68 s, then its
-- delivery_attempts for 0.5 s.
--
-- A day's columns are distributed the same at 100,000 rows as at 600
-- million, and the planner scales a partition's row count by its current
-- size, so statistics taken early serve the whole day. The threshold below
-- is the largest the server takes: the inserts since the last ANALYZE never
-- reach it. Autovacuum still VACUUMs and freezes the partitions; the
-- parents, which autovacuum never analyzes, are not partitions and keep no
-- such setting (a partitioned table takes no storage parameters).
--
-- hookrelay_history_statistics (00080), which hookrelay_ensure_partitions
-- calls for every new partition, sets it from now on.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookrelay_history_statistics(rel text) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    EXECUTE (
        SELECT format('ALTER TABLE %I %s', rel,
                      string_agg(format('ALTER COLUMN %I SET STATISTICS 10', a.attname), ', ' ORDER BY a.attnum))
        FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = to_regclass(quote_ident(rel)) AND a.attnum > 0 AND NOT a.attisdropped);
    IF (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = to_regclass(quote_ident(rel))) = 'r' THEN
        EXECUTE format('ALTER TABLE %I SET (autovacuum_analyze_threshold = 2147483647)', rel);
    END IF;
END
$fn$;
-- +goose StatementEnd

SELECT hookrelay_history_statistics(c.relname)
FROM pg_catalog.pg_class c
WHERE c.oid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                WHERE i.inhparent IN ('messages'::regclass, 'delivery_attempts'::regclass, 'idempotency_keys'::regclass));

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookrelay_history_statistics(rel text) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    EXECUTE (
        SELECT format('ALTER TABLE %I %s', rel,
                      string_agg(format('ALTER COLUMN %I SET STATISTICS 10', a.attname), ', ' ORDER BY a.attnum))
        FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = to_regclass(quote_ident(rel)) AND a.attnum > 0 AND NOT a.attisdropped);
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    part text;
BEGIN
    FOR part IN SELECT c.relname FROM pg_catalog.pg_class c
                WHERE c.oid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                                WHERE i.inhparent IN ('messages'::regclass, 'delivery_attempts'::regclass, 'idempotency_keys'::regclass))
    LOOP
        EXECUTE format('ALTER TABLE %I RESET (autovacuum_analyze_threshold)', part);
    END LOOP;
END
$$;
-- +goose StatementEnd
