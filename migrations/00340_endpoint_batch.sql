-- +goose Up
-- Batched push. endpoints.batch_max_events > 0 makes a push endpoint's
-- deliveries go as JSON arrays of up to that many events, one signed POST
-- each (0: one delivery per request); batch_max_wait_ms bounds how long a
-- claimed delivery waits in the dispatcher for more of the endpoint's
-- deliveries to join its batch. A poll endpoint has none (0).
ALTER TABLE endpoints
    ADD COLUMN batch_max_events integer NOT NULL DEFAULT 0
        CHECK (batch_max_events BETWEEN 0 AND 100),
    ADD COLUMN batch_max_wait_ms integer NOT NULL DEFAULT 0
        CHECK (batch_max_wait_ms BETWEEN 0 AND 10000);

-- +goose Down
ALTER TABLE endpoints DROP COLUMN batch_max_wait_ms, DROP COLUMN batch_max_events;
