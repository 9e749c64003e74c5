-- +goose Up
-- replays: re-deliveries of an endpoint's past deliveries in a window, asked
-- for through the API and carried out by the maintenance role in bounded
-- batches. The cursor (cursor_at, cursor_id) is the last source row a batch
-- read, in (time, delivery id) order; it is committed with the deliveries
-- that batch queued, so a replay resumes after a crash where it stopped and
-- queues nothing twice. status is which past deliveries: delivered (a
-- successful attempt in the window), failed (a dead letter that died in the
-- window) or all (both). ordering_key, when set, keeps only that key's.
CREATE TABLE replays (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id  bigint NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
    status       text NOT NULL CHECK (status IN ('delivered', 'failed', 'all')),
    ordering_key text,
    since        timestamptz NOT NULL,
    until        timestamptz NOT NULL CHECK (until > since),
    state        text NOT NULL DEFAULT 'running'
                 CHECK (state IN ('running', 'finished', 'cancelled')),
    cursor_at    timestamptz NOT NULL,
    cursor_id    bigint NOT NULL DEFAULT 0,
    total        bigint NOT NULL DEFAULT 0,
    done         bigint NOT NULL DEFAULT 0,
    failed       bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
-- The runner's look-up of the replays it has to advance.
CREATE INDEX replays_running_idx ON replays (id) WHERE state = 'running';
CREATE INDEX replays_endpoint_idx ON replays (endpoint_id, id);

-- +goose Down
DROP TABLE replays;
