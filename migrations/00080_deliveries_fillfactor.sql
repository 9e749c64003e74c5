-- +goose Up
-- The hot queue table starts sparse: fillfactor 10. Its dead rows go away
-- without a VACUUM only when PostgreSQL prunes their page, and it prunes a
-- page it reads only when the page's free space is below the share that
-- fillfactor reserves (at least a tenth). At the old fillfactor 70 that is
-- under 30 % free; but a queue that keeps up holds a few hundred live rows
-- over a heap of a megabyte or more, nearly every page is mostly free, and
-- the rows acknowledged since the last VACUUM stayed as dead tuples: 6-10 %
-- of the heap on average and over 10 % in a quarter to half of the samples
-- of a soak, whatever the VACUUM frequency. At fillfactor 10 a page is
-- pruned as soon as it holds more than ~800 bytes, that is whenever a claim
-- or an acknowledgement reads it, and the same soak keeps dead space at
-- ~1 % (docs/benchmarks.md, "Seventh pass").
--
-- A sparse table is also an 8x larger one when rows pile up (a backlog of
-- 1,000,000 deliveries: 1.3 GB of heap against 160 MB at 70), which slows
-- a drain; the maintenance role therefore packs the table (fillfactor 70)
-- while its live rows are many and makes it sparse again when they are few
-- (maintenance/fillfactor.go). Rows keep the place they were given.
ALTER TABLE deliveries SET (fillfactor = 10);

-- +goose Down
ALTER TABLE deliveries SET (fillfactor = 70);
