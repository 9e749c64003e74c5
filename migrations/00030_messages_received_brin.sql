-- +goose Up
-- The stat sampler counts the callbacks received in each ~10 s window. messages
-- is append-only in received_at order, so a BRIN index answers that range for
-- almost nothing on insert (new pages stay unsummarised and are always read).
CREATE INDEX messages_received_brin_idx ON messages USING brin (received_at);

-- +goose Down
DROP INDEX messages_received_brin_idx;
