-- +goose Up
-- The parked rows of the hot table, by chain. An acknowledgement promotes the
-- parked successor of each row it deletes; most of those rows have none (when
-- tracking numbers interleave, a claim reaches a row only once the row before
-- it is delivered, and leases it as a head). Asked of deliveries_chain_idx,
-- "is the next row of this chain parked?" costs a descent of the chain index
-- and a heap fetch of the next row for every delivered row, found or not:
-- about a third of a core in a 1,000,000-row drain. Asked of this index,
-- it costs a descent of an index
-- that holds only the parked rows: a page or two, and nothing more unless
-- one is there. A row gets an entry only when it is parked (visible_at =
-- 'infinity'), an update that was non-HOT already (visible_at is a key of
-- deliveries_claim_idx); the lease stays HOT, and ingest's rows get none.
--
-- A plain CREATE INDEX: it holds writes to the table for as long as it reads
-- the heap (the live backlog: 0.16 s for a million rows on the 2-vCPU test
-- machine).
CREATE INDEX deliveries_parked_idx ON deliveries (endpoint_id, ordering_key, id)
    WHERE visible_at = 'infinity';

-- +goose Down
DROP INDEX deliveries_parked_idx;
