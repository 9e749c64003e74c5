-- +goose Up
-- carrier_refusals: callbacks refused to carriers (the refusal log), with
-- the reason, the answer and a bounded excerpt of the request (headers
-- without credentials, the start of the body). History: partitioned by day
-- like messages, the day tables made ahead and dropped after their
-- retention by the maintenance role (hookrelay_ensure_partitions below).
-- Written in batches by the API (ingest.Watch), at most a capped number of
-- rows per carrier a minute and a day; the refusals beyond a cap are
-- counted in one row per carrier, reason and minute (dropped > 0, no
-- excerpt). carrier_id 0: a refusal whose carrier is not known (a key that
-- authenticates nobody). No foreign key: the history outlives carriers.
CREATE SEQUENCE carrier_refusals_id_seq AS bigint;
CREATE TABLE carrier_refusals (
    id           bigint NOT NULL DEFAULT nextval('carrier_refusals_id_seq'),
    carrier_id   bigint NOT NULL,
    received_at  timestamptz NOT NULL,
    status       smallint NOT NULL,
    reason       text NOT NULL,
    message      text NOT NULL,
    headers      jsonb NOT NULL DEFAULT '{}',
    body_excerpt text NOT NULL DEFAULT '',
    body_size    integer NOT NULL DEFAULT 0,
    dropped      integer NOT NULL DEFAULT 0,
    PRIMARY KEY (id, received_at)
) PARTITION BY RANGE (received_at);
CREATE INDEX carrier_refusals_carrier_idx ON carrier_refusals (carrier_id, received_at DESC, id DESC);

-- carrier_stats: per carrier and minute, the callbacks accepted and refused
-- (per reason), the answers' latency histogram (counts per bucket of
-- ingest.LatencyBounds) and the last callback's time, added to by every API
-- process every few seconds. Small (active carriers x minutes of a day):
-- the maintenance role deletes the rows older than a day.
CREATE TABLE carrier_stats (
    carrier_id  bigint NOT NULL,
    minute      timestamptz NOT NULL,
    accepted    bigint NOT NULL DEFAULT 0,
    refused     jsonb NOT NULL DEFAULT '{}',
    latency     bigint[] NOT NULL DEFAULT '{}',
    last_at     timestamptz NOT NULL,
    PRIMARY KEY (carrier_id, minute)
);

-- The partition maker of 00080 with carrier_refusals among its tables.
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
        FOREACH t IN ARRAY ARRAY['messages', 'delivery_attempts', 'idempotency_keys', 'carrier_refusals'] LOOP
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

SELECT hookrelay_history_statistics('carrier_refusals');
SELECT hookrelay_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1, 3);

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
DROP TABLE carrier_stats;
DROP TABLE carrier_refusals;
DROP SEQUENCE carrier_refusals_id_seq;
