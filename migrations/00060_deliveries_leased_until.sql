-- +goose Up
-- A claim used to lease a row by moving visible_at to the end of its lease.
-- visible_at is a key column of deliveries_claim_idx, so every lease was a
-- non-HOT update: a new entry in all four indexes of the hot table for every
-- delivery, dead entries for vacuum to find and for the next claims and
-- promotes to step over. The lease now lives in its own column, which no
-- index covers: a lease (and its extension, and a release) is a HOT update
-- that page pruning cleans up without VACUUM. The claim skips rows whose
-- lease has not expired by reading them (they are at the front of their
-- queue's range of the claim index, a handful per queue: the deliveries in
-- flight).
--
-- Rows leased before this migration keep visible_at = end of lease and a
-- NULL leased_until: they become claimable when visible_at passes, as before.
ALTER TABLE deliveries ADD COLUMN leased_until timestamptz;

-- +goose Down
ALTER TABLE deliveries DROP COLUMN leased_until;
