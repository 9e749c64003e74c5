-- +goose Up
-- An endpoint's ordering: 'key' (the default) delivers one ordering key's
-- callbacks one after another (docs/guarantees.md, "Order"); 'none' lets them go at once, for
-- receivers that do not need order. Ingest reads it when it stores a
-- callback's deliveries (deliveries.ordered), so a change applies to
-- callbacks stored after it; deliveries already queued keep their mode.
-- A constant default: no table rewrite.
ALTER TABLE endpoints ADD COLUMN ordering text NOT NULL DEFAULT 'key'
    CHECK (ordering IN ('key', 'none'));

-- +goose Down
ALTER TABLE endpoints DROP COLUMN ordering;
