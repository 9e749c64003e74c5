-- +goose Up
-- endpoint_health.unreadable_since / unreadable_reason: a dispatcher found
-- that an endpoint's signing secret, a header value or its credentials
-- cannot be opened with the keys it holds (sealed under a key id declared
-- lost, or by a process with another key). Its deliveries are parked, not
-- attempted; the dashboard shows the state, and the dispatcher that sets
-- it reports endpoint.secret_unreadable in the same transaction (setting
-- it only when it was not set, so one event per episode however many
-- dispatchers find it). A dispatcher that opens the endpoint again clears
-- it and makes the parked deliveries due. Not configuration: no
-- configuration version is raised.
ALTER TABLE endpoint_health
    ADD COLUMN unreadable_since  timestamptz,
    ADD COLUMN unreadable_reason text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE endpoint_health DROP COLUMN unreadable_reason, DROP COLUMN unreadable_since;
