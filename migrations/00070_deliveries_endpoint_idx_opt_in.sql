-- +goose Up
-- The chain look-ups of the claim and the promote ("the row of this
-- (endpoint, ordering key) just before / after this id") name the endpoint and
-- the key with equalities, so that the scan of deliveries_chain_idx stops at
-- the chain's edge: written as a row comparison alone, a look-up read and
-- compared every entry from its position to the edge of the index page, a
-- third of a claim's execution time. But with an equality on endpoint_id the
-- planner may answer a look-up from (endpoint_id, id) instead, reading every
-- row of the endpoint, and it did so when the table's statistics were taken
-- while it was small (TestChainLookupsUseChainIndex).
--
-- The endpoint index is therefore opt-in: partial on id > 0, which every id
-- satisfies, so only a statement that says "id > 0" can use it — the
-- endpoint's listings, counts and bulk updates do; the chain look-ups do not.
DROP INDEX deliveries_endpoint_idx;
CREATE INDEX deliveries_endpoint_idx ON deliveries (endpoint_id, id) WHERE id > 0;

-- +goose Down
DROP INDEX deliveries_endpoint_idx;
CREATE INDEX deliveries_endpoint_idx ON deliveries (endpoint_id, id);
