-- +goose Up
-- Pull endpoints. endpoints.type is "push" (hookrelay POSTs each delivery
-- to url) or "poll" (the merchant fetches its deliveries with
-- GET /v1/endpoints/{id}/events and acknowledges them; url is ''). Fixed
-- at creation. A poll endpoint's deliveries are rows of deliveries like any
-- other, created by the same fan-out; the claim parks them (visible_at =
-- 'infinity') the first time it meets one, so no dispatcher ever leases
-- them.
--
-- deliveries.pull_token: the pull that last served the row (from
-- deliveries_pull_token_seq, increasing), NULL while not served. A pull
-- serves the rows not covered by the caller's cursor (token, id) and sets
-- their token; an acknowledgement deletes the rows its cursor covers. The
-- claim never writes it (it writes lease_token), so a claim parking a row
-- just served cannot undo the serve. deliveries_pull_idx holds only served
-- rows: the acknowledgement's range, whatever the backlog behind it.
ALTER TABLE endpoints
    ADD COLUMN type text NOT NULL DEFAULT 'push' CHECK (type IN ('push', 'poll'));
ALTER TABLE deliveries ADD COLUMN pull_token bigint;
CREATE SEQUENCE deliveries_pull_token_seq AS bigint;
CREATE INDEX deliveries_pull_idx ON deliveries (endpoint_id, pull_token, id)
    WHERE pull_token IS NOT NULL;

-- +goose Down
DROP INDEX deliveries_pull_idx;
DROP SEQUENCE deliveries_pull_token_seq;
ALTER TABLE deliveries DROP COLUMN pull_token;
ALTER TABLE endpoints DROP COLUMN type;
