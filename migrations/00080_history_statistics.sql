-- +goose Up
-- Autovacuum ANALYZEs each day partition of the history whenever it has grown
-- by a tenth, and an ANALYZE holds a snapshot while it samples, unlike a
-- VACUUM: for that time no VACUUM in the cluster can remove a row deleted
-- after its start, and the hot queue, which turns over its few hundred live
-- rows several times a second, fills with dead ones. With the default
-- statistics target an ANALYZE samples 30,000 rows, one page read each;
-- measured on a day partition of 1.3 million callbacks (1.9 GB): 1.95 s for
-- messages, 0.56 s for delivery_attempts, and in a soak the queue's dead space
-- went from ~2 % to 63-73 % of its heap at each of them, every minute or two.
-- The history is read through its keys and the BRIN ranges of a time window;
-- no plan needs more than coarse statistics of it. A target of 10 samples
-- 3,000 rows: 0.13 s and 0.10 s on the same partitions.
--
-- LIKE does not copy a column's statistics target, so new partitions get it
-- from hookrelay_ensure_partitions (the function of 00001 with one step
-- more); existing ones and the parents get it here.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookrelay_ensure_partitions(from_day date, days integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    d       date;
    t       text;
    part    text;
    lo      text;
    hi      text;
    created integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(7368211001);
    FOR i IN 0..days LOOP
        d := from_day + i;
        FOREACH t IN ARRAY ARRAY['messages', 'delivery_attempts', 'idempotency_keys'] LOOP
            part := t || '_p' || to_char(d, 'YYYYMMDD');
            IF to_regclass(part) IS NULL THEN
                IF t = 'idempotency_keys' THEN
                    lo := d::text;
                    hi := (d + 1)::text;
                ELSE
                    lo := (d::timestamp AT TIME ZONE 'UTC')::text;
                    hi := ((d + 1)::timestamp AT TIME ZONE 'UTC')::text;
                END IF;
                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)', part, t);
                PERFORM hookrelay_history_statistics(part);
                EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', t, part, lo, hi);
                created := created + 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN created;
END
$fn$;
-- +goose StatementEnd

-- hookrelay_history_statistics sets the statistics target of every column of
-- a history table (a day partition or a parent) to 10.
-- +goose StatementBegin
CREATE FUNCTION hookrelay_history_statistics(rel text) RETURNS void
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

SELECT hookrelay_history_statistics(c.relname)
FROM pg_catalog.pg_class c
WHERE c.oid IN ('messages'::regclass, 'delivery_attempts'::regclass, 'idempotency_keys'::regclass)
   OR c.oid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                WHERE i.inhparent IN ('messages'::regclass, 'delivery_attempts'::regclass, 'idempotency_keys'::regclass));

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hookrelay_ensure_partitions(from_day date, days integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    d       date;
    t       text;
    part    text;
    lo      text;
    hi      text;
    created integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(7368211001);
    FOR i IN 0..days LOOP
        d := from_day + i;
        FOREACH t IN ARRAY ARRAY['messages', 'delivery_attempts', 'idempotency_keys'] LOOP
            part := t || '_p' || to_char(d, 'YYYYMMDD');
            IF to_regclass(part) IS NULL THEN
                IF t = 'idempotency_keys' THEN
                    lo := d::text;
                    hi := (d + 1)::text;
                ELSE
                    lo := (d::timestamp AT TIME ZONE 'UTC')::text;
                    hi := ((d + 1)::timestamp AT TIME ZONE 'UTC')::text;
                END IF;
                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)', part, t);
                EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', t, part, lo, hi);
                created := created + 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN created;
END
$fn$;
-- +goose StatementEnd
DROP FUNCTION hookrelay_history_statistics(text);
