-- +goose Up
-- delivery_attempts (endpoint_id, message_id) INCLUDE (message_received_at,
-- attempted_at):
-- a message search by endpoint or merchant (GET /v1/messages?endpoint_id=,
-- a merchant's own search) reads the endpoint's messages newest first from
-- here, a page at a time, instead of walking every message of the window
-- and probing its attempts (an endpoint with 1 % of the traffic had the walk
-- test a hundred messages for each one it kept). The included columns are
-- what the search tests, so a closed day (all visible once vacuumed)
-- answers from the index alone.
-- Message ids grow with time, so an endpoint's new entries go to the right
-- edge of its part of the index. One more index entry per attempt; the
-- lock note of 00130 applies (build each partition's index CONCURRENTLY
-- first on a large history).
CREATE INDEX delivery_attempts_endpoint_message_idx
    ON delivery_attempts (endpoint_id, message_id) INCLUDE (message_received_at, attempted_at);

-- +goose Down
DROP INDEX delivery_attempts_endpoint_message_idx;
