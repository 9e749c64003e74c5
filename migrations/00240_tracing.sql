-- +goose Up
-- Tracing (HOOKRELAY_TRACING): a message keeps the W3C traceparent of the
-- request that stored it, so the span of each delivery attempt, made later
-- and maybe in another process, is a child of it. NULL when tracing was off
-- (no default, no rewrite: a NULL costs a bit in the row's null bitmap,
-- which every message already has).
ALTER TABLE messages ADD COLUMN traceparent text;
-- Coarse statistics, like every column of the history (migration 00080);
-- this reaches the existing day partitions, hookrelay_ensure_partitions
-- sets it on the new ones.
ALTER TABLE messages ALTER COLUMN traceparent SET STATISTICS 10;

-- Whether deliveries to the endpoint carry a traceparent header (when
-- tracing is on). A constant default: no table rewrite.
ALTER TABLE endpoints ADD COLUMN send_traceparent boolean NOT NULL DEFAULT true;

-- +goose Down
ALTER TABLE endpoints DROP COLUMN send_traceparent;
ALTER TABLE messages DROP COLUMN traceparent;
