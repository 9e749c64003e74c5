-- +goose Up
-- The maintenance role vacuums deliveries every few seconds under load. A
-- VACUUM that finds empty pages at the end of the table truncates them, and
-- truncation takes an ACCESS EXCLUSIVE lock on the hot table (claims, acks
-- and group commits wait behind it) only for the pages to be extended again
-- moments later. Keep the pages; free space inside the table is reused.
ALTER TABLE deliveries SET (vacuum_truncate = false);

-- +goose Down
ALTER TABLE deliveries RESET (vacuum_truncate);
