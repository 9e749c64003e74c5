-- +goose Up
-- Autovacuum neither ANALYZEs the history's day partitions nor VACUUMs them
-- for their inserts; the maintenance role does both, each when it costs the
-- hot queue nothing: it analyzes a day while the day is small
-- (maintenance/analyze.go) and vacuums (and freezes) a day once it is closed
-- (maintenance/retention.go).
--
-- ANALYZE. Autovacuum ANALYZEs a table each time it has grown by a tenth: a
-- day of 600 million callbacks would be analyzed ~65 times, the late ones
-- sampling random pages of a table far larger than memory. An ANALYZE holds
-- a snapshot while it samples, and for that time no VACUUM in the cluster
-- can remove a row deleted after its start: in a 58-minute soak the one
-- sample of 669 whose queue dead space passed 10 % (27 %) came while
-- autovacuum analyzed the day's messages, 5 million rows in 7 GB, for
-- 0.68 s, then its delivery_attempts for 0.5 s. A day's columns are
-- distributed the same at 100,000 rows as at 600 million, and the planner
-- scales a partition's row count by its current size, so statistics taken
-- early serve the whole day. The threshold below is the largest the server
-- takes: the inserts since the last ANALYZE never reach it.
--
-- VACUUM. Autovacuum VACUUMs an insert-only table each time a fifth of it
-- is new (autovacuum_vacuum_insert_scale_factor), to set its visibility map
-- and spread its freezing. On the open day such a VACUUM reads the day's
-- newest fifth under the cost delay, 1.4 GB of a 7-GB day for over a
-- minute in a soak, and holds the partition's SHARE UPDATE EXCLUSIVE lock as
-- long: the stat sampler's BRIN summary of the day then times out, each of
-- its one-second window counts reads every range added since, and they grew
-- from 0.15 to 4.7 s, their snapshots with them (the queue's dead space
-- reached 23 %). Later in a day each such VACUUM is longer. A closed day is
-- written no more: one VACUUM (FREEZE) of it sets its visibility map and
-- freezes it for good, the work the insert-driven passes would spread over
-- the day and an anti-wraparound VACUUM would otherwise do again. -1
-- switches insert-driven VACUUMs off; VACUUMs for dead rows (aborted
-- inserts) and against wraparound stay autovacuum's.
--
-- Partitioned parents take no storage parameters, and autovacuum never
-- processes them. hookrelay_history_statistics (00080), which
-- hookrelay_ensure_partitions calls for every new partition, sets both from
-- now on.
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
        EXECUTE format('ALTER TABLE %I SET (autovacuum_analyze_threshold = 2147483647, autovacuum_vacuum_insert_threshold = -1)', rel);
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
        EXECUTE format('ALTER TABLE %I RESET (autovacuum_analyze_threshold, autovacuum_vacuum_insert_threshold)', part);
    END LOOP;
END
$$;
-- +goose StatementEnd
