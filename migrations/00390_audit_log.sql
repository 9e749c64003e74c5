-- +goose Up
-- audit_log: who did what, to what, when, from where, with what result —
-- every change and operator action, and every reading of a message body.
-- Append-only and hash-chained: hash = SHA-256(prev_hash || the entry's
-- canonical encoding) (package audit), so an edit or a deletion inside the
-- retained log breaks the chain (hookrelay audit verify). id is the chain
-- order: gapless, given by audit_head under its row lock, never by a
-- sequence (a rolled-back append leaves no hole). Partitioned by day of at
-- (at never goes back along the chain, so a day holds a contiguous id
-- range); the day tables are made ahead by hookrelay_audit_partitions and
-- dropped after HOOKRELAY_AUDIT_RETENTION by the maintenance role, which
-- records the last dropped entry as the chain's anchor (audit_head) and in
-- an audit.pruned entry. before/after are json, not jsonb: the text is kept
-- byte for byte, as it was hashed.
CREATE TABLE audit_log (
    id                bigint NOT NULL,
    at                timestamptz NOT NULL,
    actor_kind        text NOT NULL,
    actor_role        text NOT NULL DEFAULT '',
    actor_user_id     bigint NOT NULL DEFAULT 0,
    actor_token_id    bigint NOT NULL DEFAULT 0,
    actor_session_id  bigint NOT NULL DEFAULT 0,
    actor_merchant_id bigint NOT NULL DEFAULT 0,
    actor_carrier_id  bigint NOT NULL DEFAULT 0,
    actor_name        text NOT NULL DEFAULT '',
    addr              text NOT NULL DEFAULT '',
    user_agent        text NOT NULL DEFAULT '',
    action            text NOT NULL,
    target_type       text NOT NULL DEFAULT '',
    target_id         text NOT NULL DEFAULT '',
    before            json,
    after             json,
    result            text NOT NULL,
    error             text NOT NULL DEFAULT '',
    prev_hash         bytea NOT NULL,
    hash              bytea NOT NULL,
    PRIMARY KEY (id, at)
) PARTITION BY RANGE (at);
CREATE INDEX audit_log_action_idx ON audit_log (action, id);
CREATE INDEX audit_log_target_idx ON audit_log (target_type, target_id, id);
CREATE INDEX audit_log_actor_idx ON audit_log (actor_name, id);

-- audit_head: the chain's one row. Appends lock it (FOR UPDATE) in the
-- transaction of their insert, so the chain is a line; it holds the newest
-- entry (last_id, last_at, hash: deleting the newest entries is caught) and
-- the anchor the retained log starts from (the last entry dropped by
-- retention; 0 and 32 zero bytes before any drop).
CREATE TABLE audit_head (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_id     bigint NOT NULL DEFAULT 0,
    last_at     timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00',
    hash        bytea NOT NULL DEFAULT decode(repeat('00', 32), 'hex'),
    anchor_id   bigint NOT NULL DEFAULT 0,
    anchor_hash bytea NOT NULL DEFAULT decode(repeat('00', 32), 'hex')
);
INSERT INTO audit_head DEFAULT VALUES;

-- Makes the audit_log day tables of from_day and the days after it,
-- missing ones only; returns how many it made.
-- +goose StatementBegin
CREATE FUNCTION hookrelay_audit_partitions(from_day date, days integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    d       date;
    part    text;
    created integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(7368211003);
    FOR i IN 0..days LOOP
        d := from_day + i;
        part := 'audit_log_p' || to_char(d, 'YYYYMMDD');
        IF to_regclass(part) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF audit_log FOR VALUES FROM (%L) TO (%L)', part,
                           (d::timestamp AT TIME ZONE 'UTC')::text, ((d + 1)::timestamp AT TIME ZONE 'UTC')::text);
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END
$fn$;
-- +goose StatementEnd

SELECT hookrelay_audit_partitions((now() AT TIME ZONE 'UTC')::date - 1, 4);

-- +goose Down
DROP FUNCTION hookrelay_audit_partitions(date, integer);
DROP TABLE audit_head;
DROP TABLE audit_log;
