-- +goose Up
-- endpoint_health.poll_lagging_since: when the maintenance holder found a
-- poll endpoint's oldest unacknowledged delivery older than
-- HOOKRELAY_POLL_LAG_ALERT. Set only when not set, in the transaction that
-- reports endpoint.poll_lagging, and cleared in the one that reports
-- endpoint.poll_caught_up, so one pair of events goes out per episode
-- however many samples, restarts or leadership changes see it. Not
-- configuration: no configuration version is raised.
ALTER TABLE endpoint_health ADD COLUMN poll_lagging_since timestamptz;

-- +goose Down
ALTER TABLE endpoint_health DROP COLUMN poll_lagging_since;
