-- +goose Up
-- Operational webhooks: the operator's own receivers of events about the
-- platform (an endpoint disabled, a circuit opened, dead letters, a long
-- transaction), apart from merchant deliveries.
CREATE TABLE ops_endpoints (
    id          bigserial PRIMARY KEY,
    url         text NOT NULL,
    -- The event types sent to it; empty means every type.
    events      text[] NOT NULL DEFAULT '{}',
    description text NOT NULL DEFAULT '',
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The outbox: one row per state change, written in the transaction of the
-- change, and only while some ops endpoint wants its type (so nothing piles
-- up without receivers). The dispatcher's ops loop turns rows into
-- ops_deliveries (dead letters coalesced per endpoint) and deletes them.
CREATE TABLE ops_events (
    id          bigserial PRIMARY KEY,
    type        text NOT NULL,
    endpoint_id bigint,
    -- How many occurrences the row stands for (dead letters of one batch).
    count       integer NOT NULL DEFAULT 1,
    data        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- One signed message to one ops endpoint, until it is answered 2xx or its
-- attempts run out.
CREATE TABLE ops_deliveries (
    id              bigserial PRIMARY KEY,
    ops_endpoint_id bigint NOT NULL REFERENCES ops_endpoints (id) ON DELETE CASCADE,
    msg_id          text NOT NULL,
    payload         text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ops_deliveries_due_idx ON ops_deliveries (next_attempt_at);
CREATE INDEX ops_deliveries_ops_endpoint_idx ON ops_deliveries (ops_endpoint_id);

-- +goose Down
DROP TABLE ops_deliveries;
DROP TABLE ops_events;
DROP TABLE ops_endpoints;
