-- +goose Up
-- hookrelay schema. Small, ordinary tables for configuration; append-only history
-- partitioned by day (dropped, never DELETEd, after retention); one small hot
-- queue table that holds only unfinished work.

-- settings holds process-wide values such as the admin token hash.
CREATE TABLE settings (
    name       text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- carriers are the upstream senders of callbacks. The API key is stored as a
-- SHA-256 hash; signing_secret (optional) verifies X-Signature on callbacks.
CREATE TABLE carriers (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name               text NOT NULL UNIQUE,
    api_key_hash       bytea NOT NULL UNIQUE,
    api_key_prefix     text NOT NULL,
    ordering_key_field text NOT NULL DEFAULT 'tracking_no',
    event_type_field   text NOT NULL DEFAULT 'status',
    merchant_field     text NOT NULL DEFAULT 'merchant_id',
    signing_secret     text,
    rate_limit_per_sec integer NOT NULL DEFAULT 0 CHECK (rate_limit_per_sec >= 0),
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- merchants own endpoints; a merchant key sees only its own objects.
CREATE TABLE merchants (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name           text NOT NULL,
    api_key_hash   bytea NOT NULL UNIQUE,
    api_key_prefix text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- endpoints are merchant URLs with their filters and delivery settings.
-- carrier_ids / event_types empty means "all". retry_schedule_ms empty means the
-- default schedule. status is enabled | disabled | deleted.
CREATE TABLE endpoints (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    merchant_id        bigint NOT NULL REFERENCES merchants (id),
    url                text NOT NULL,
    description        text NOT NULL DEFAULT '',
    carrier_ids        bigint[] NOT NULL DEFAULT '{}',
    event_types        text[] NOT NULL DEFAULT '{}',
    status             text NOT NULL DEFAULT 'enabled'
                       CHECK (status IN ('enabled', 'disabled', 'deleted')),
    disabled_reason    text NOT NULL DEFAULT '',
    max_in_flight      integer NOT NULL DEFAULT 10 CHECK (max_in_flight BETWEEN 1 AND 1000),
    rate_limit_per_sec integer NOT NULL DEFAULT 0 CHECK (rate_limit_per_sec >= 0),
    payload_mode       text NOT NULL DEFAULT 'inline' CHECK (payload_mode IN ('inline', 'reference')),
    retry_schedule_ms  bigint[] NOT NULL DEFAULT '{}',
    timeout_ms         integer NOT NULL DEFAULT 15000 CHECK (timeout_ms BETWEEN 100 AND 120000),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX endpoints_merchant_idx ON endpoints (merchant_id, id);

-- endpoint_secrets: every secret that may sign. Rotation adds a new row and
-- sets expires_at = now() + 24h on the previous one.
CREATE TABLE endpoint_secrets (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id bigint NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz
);
CREATE INDEX endpoint_secrets_endpoint_idx ON endpoint_secrets (endpoint_id, id);

-- endpoint_health: delivery health and circuit breaker per endpoint, updated by
-- the dispatcher's ack batches (kept apart from endpoints so configuration rows
-- do not churn). circuit_state is closed | open | half_open.
CREATE TABLE endpoint_health (
    endpoint_id          bigint PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
    consecutive_failures integer NOT NULL DEFAULT 0,
    circuit_state        text NOT NULL DEFAULT 'closed'
                         CHECK (circuit_state IN ('closed', 'open', 'half_open')),
    circuit_open_until   timestamptz,
    circuit_backoff_ms   bigint NOT NULL DEFAULT 0,
    failing_since        timestamptz,
    last_success_at      timestamptz,
    last_failure_at      timestamptz,
    last_error           text NOT NULL DEFAULT '',
    updated_at           timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70);

CREATE SEQUENCE messages_id_seq AS bigint CACHE 100;

-- messages: one row per accepted callback, append-only, partitioned by day on
-- received_at. Inline payload (<= offload threshold) or payload_key into S3 with
-- its size and sha256; never both.
CREATE TABLE messages (
    id              bigint NOT NULL DEFAULT nextval('messages_id_seq'),
    received_at     timestamptz NOT NULL DEFAULT now(),
    carrier_id      bigint NOT NULL,
    event_type      text NOT NULL DEFAULT '',
    ordering_key    text NOT NULL,
    merchant_ref    text NOT NULL DEFAULT '',
    queue           smallint NOT NULL,
    idempotency_key text,
    payload         bytea,
    payload_key     text,
    payload_size    integer NOT NULL,
    payload_sha256  bytea NOT NULL,
    deliveries      integer NOT NULL DEFAULT 0,
    PRIMARY KEY (id, received_at),
    CHECK ((payload IS NULL) <> (payload_key IS NULL))
) PARTITION BY RANGE (received_at);

CREATE SEQUENCE deliveries_id_seq AS bigint CACHE 100;

-- deliveries: THE HOT QUEUE. One row per (message, endpoint) not finished yet;
-- delivered and dead rows are deleted, so the table is as big as the live
-- backlog. visible_at is both the retry time and the lease (visibility
-- timeout); 'infinity' parks a row (behind its predecessor in the same
-- (endpoint, ordering key) chain, or held for a disabled endpoint).
-- ordered = false for operator retries of dead letters: they never wait for,
-- nor hold back, the chain.
CREATE TABLE deliveries (
    id                  bigint PRIMARY KEY DEFAULT nextval('deliveries_id_seq'),
    queue               smallint NOT NULL,
    endpoint_id         bigint NOT NULL,
    ordering_key        text NOT NULL,
    ordered             boolean NOT NULL DEFAULT true,
    message_id          bigint NOT NULL,
    message_received_at timestamptz NOT NULL,
    attempt             integer NOT NULL DEFAULT 0,
    visible_at          timestamptz NOT NULL DEFAULT now(),
    lease_owner         bigint,
    lease_token         bigint,
    last_status         integer,
    last_error          text,
    created_at          timestamptz NOT NULL DEFAULT now()
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0.0,
    autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_vacuum_cost_limit = 3000
);
-- Claim path: due rows of one logical queue in order. Parked rows stay out of it.
CREATE INDEX deliveries_claim_idx ON deliveries (queue, visible_at, id)
    WHERE visible_at < 'infinity';
-- Chain path: "is there an earlier row of this (endpoint, key)?" and "who is next?".
CREATE INDEX deliveries_chain_idx ON deliveries (endpoint_id, ordering_key, id)
    WHERE ordered;
CREATE INDEX deliveries_endpoint_idx ON deliveries (endpoint_id, id);

-- delivery_attempts: history of every attempt, append-only, partitioned by day.
-- outcome: success | failed | timeout | conn_error | gone | throttled | refused.
CREATE TABLE delivery_attempts (
    delivery_id         bigint NOT NULL,
    message_id          bigint NOT NULL,
    message_received_at timestamptz NOT NULL,
    endpoint_id         bigint NOT NULL,
    attempt             integer NOT NULL,
    attempted_at        timestamptz NOT NULL DEFAULT now(),
    outcome             text NOT NULL,
    status_code         integer NOT NULL DEFAULT 0,
    latency_ms          integer NOT NULL DEFAULT 0,
    error               text NOT NULL DEFAULT '',
    response_excerpt    text NOT NULL DEFAULT '',
    dispatcher_id       bigint
) PARTITION BY RANGE (attempted_at);
CREATE INDEX delivery_attempts_delivery_idx ON delivery_attempts (delivery_id, attempt);
CREATE INDEX delivery_attempts_endpoint_idx ON delivery_attempts (endpoint_id, attempted_at);
CREATE INDEX delivery_attempts_time_idx ON delivery_attempts USING brin (attempted_at);

-- dead_letters: deliveries that used up their retries, waiting for an operator
-- (retry puts them back into deliveries as unordered rows; discard deletes).
CREATE TABLE dead_letters (
    id                  bigint PRIMARY KEY,
    message_id          bigint NOT NULL,
    message_received_at timestamptz NOT NULL,
    endpoint_id         bigint NOT NULL,
    merchant_id         bigint NOT NULL,
    carrier_id          bigint NOT NULL,
    queue               smallint NOT NULL,
    ordering_key        text NOT NULL,
    event_type          text NOT NULL DEFAULT '',
    attempts            integer NOT NULL,
    last_status         integer,
    last_error          text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_created_idx ON dead_letters (created_at, id);
CREATE INDEX dead_letters_endpoint_idx ON dead_letters (endpoint_id, created_at, id);
CREATE INDEX dead_letters_carrier_idx ON dead_letters (carrier_id, created_at, id);
CREATE INDEX dead_letters_merchant_idx ON dead_letters (merchant_id, created_at, id);

-- idempotency_keys: Idempotency-Key dedupe, partitioned by day so the window is
-- kept by dropping whole days. A key is a duplicate if found in today's or
-- yesterday's partition with created_at within 24 h.
CREATE TABLE idempotency_keys (
    carrier_id          bigint NOT NULL,
    idem_key            text NOT NULL,
    day                 date NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    message_id          bigint NOT NULL,
    message_received_at timestamptz NOT NULL,
    deliveries          integer NOT NULL DEFAULT 0,
    PRIMARY KEY (carrier_id, idem_key, day)
) PARTITION BY RANGE (day);

-- dispatchers: one row per running dispatcher process, heartbeating.
CREATE TABLE dispatchers (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hostname     text NOT NULL,
    pid          integer NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    stopped_at   timestamptz
) WITH (fillfactor = 50);

-- queue_leases: which dispatcher holds which logical queue, until when.
-- epoch increases on every change of owner (fencing).
CREATE TABLE queue_leases (
    queue      smallint PRIMARY KEY,
    owner      bigint,
    epoch      bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
) WITH (fillfactor = 50);

-- stat_samples: periodic service-wide counters sampled by the maintenance role
-- for the dashboard charts (last hour is shown; older rows trimmed).
CREATE TABLE stat_samples (
    sampled_at timestamptz PRIMARY KEY,
    data       jsonb NOT NULL
);

-- maintenance_runs: when each maintenance job last ran (catch-up after downtime).
CREATE TABLE maintenance_runs (
    job         text PRIMARY KEY,
    last_run_at timestamptz NOT NULL,
    detail      text NOT NULL DEFAULT ''
);

-- hookrelay_ensure_partitions creates the day partitions of every partitioned
-- table from day `from_day` to `from_day + days` (inclusive). Idempotent and
-- safe to run from several processes at once. Each partition is created as a
-- plain table and then ATTACHed: ATTACH PARTITION takes only SHARE UPDATE
-- EXCLUSIVE on the parent, so it never blocks (or deadlocks with) the inserts
-- of ingest and dispatch, whereas CREATE TABLE ... PARTITION OF would take
-- ACCESS EXCLUSIVE on the parent.
-- +goose StatementBegin
CREATE FUNCTION hookrelay_ensure_partitions(from_day date, days integer) RETURNS integer
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

SELECT hookrelay_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1, 3);

-- +goose Down
DROP FUNCTION hookrelay_ensure_partitions(date, integer);
DROP TABLE maintenance_runs, stat_samples, queue_leases, dispatchers, idempotency_keys,
    dead_letters, delivery_attempts, deliveries, messages, endpoint_health,
    endpoint_secrets, endpoints, merchants, carriers, settings;
DROP SEQUENCE deliveries_id_seq, messages_id_seq;
