-- +goose Up
-- Canonical events: per carrier, versioned adapters that map a callback to
-- one canonical event.
--   carrier_adapters: every version of a carrier's adapter (its source, as
--     written; versions count from 1 per carrier and are never reused).
--   carriers.adapter_version: the version ingest runs (NULL: none, the
--     callbacks are relayed as they are). adapter_on_failure: what a callback
--     the adapter fails on (or whose event fails its type's schema) becomes:
--     'refuse' (422 and a refusal in the carrier's log) or 'park' (accepted,
--     stored, delivered to raw endpoints only and kept for an operator with
--     the error).
--   messages: the adapter version that ran on the callback, the canonical
--     event it made (the envelope canonical endpoints receive, built once
--     at ingest) and its type. The original body (payload / payload_key)
--     never changes. NULL without an adapter: no default, no rewrite.
--   parked_callbacks: the callbacks of carriers that park them which their
--     adapter failed on, with the error, until an operator unparks them
--     (few rows; retention drops a message's partition, and the list skips
--     rows whose message is gone).
--   endpoints.format: 'raw' (the carrier's body as it came; every endpoint
--     made before this migration) or 'canonical' (the canonical event).
CREATE TABLE carrier_adapters (
    carrier_id bigint NOT NULL REFERENCES carriers (id) ON DELETE CASCADE,
    version    integer NOT NULL CHECK (version > 0),
    source     text NOT NULL,
    note       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (carrier_id, version)
);

ALTER TABLE carriers
    ADD COLUMN adapter_version    integer,
    ADD COLUMN adapter_on_failure text NOT NULL DEFAULT 'refuse'
        CHECK (adapter_on_failure IN ('refuse', 'park')),
    ADD CONSTRAINT carriers_adapter_fk FOREIGN KEY (id, adapter_version)
        REFERENCES carrier_adapters (carrier_id, version);

ALTER TABLE messages
    ADD COLUMN adapter_version integer,
    ADD COLUMN canonical_type  text,
    ADD COLUMN canonical_event bytea;
-- Coarse statistics, like every column of the history (migration 00080);
-- this reaches the existing day partitions, hookrelay_ensure_partitions
-- sets it on the new ones.
ALTER TABLE messages
    ALTER COLUMN adapter_version SET STATISTICS 10,
    ALTER COLUMN canonical_type SET STATISTICS 10,
    ALTER COLUMN canonical_event SET STATISTICS 10;

CREATE TABLE parked_callbacks (
    message_id          bigint NOT NULL,
    message_received_at timestamptz NOT NULL,
    carrier_id          bigint NOT NULL,
    adapter_version     integer NOT NULL,
    error               text NOT NULL,
    PRIMARY KEY (message_id, message_received_at)
);
CREATE INDEX parked_callbacks_carrier_idx ON parked_callbacks (carrier_id, message_received_at, message_id);

ALTER TABLE endpoints
    ADD COLUMN format text NOT NULL DEFAULT 'raw' CHECK (format IN ('raw', 'canonical'));

-- +goose Down
ALTER TABLE endpoints DROP COLUMN format;
DROP TABLE parked_callbacks;
ALTER TABLE messages
    DROP COLUMN canonical_event,
    DROP COLUMN canonical_type,
    DROP COLUMN adapter_version;
ALTER TABLE carriers
    DROP CONSTRAINT carriers_adapter_fk,
    DROP COLUMN adapter_on_failure,
    DROP COLUMN adapter_version;
DROP TABLE carrier_adapters;
