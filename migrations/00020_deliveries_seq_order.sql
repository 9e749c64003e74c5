-- +goose Up
-- Chains are ordered by deliveries.id, so ids must grow in the order rows are
-- inserted whatever the session: a per-session sequence cache would hand a
-- later callback of a key a smaller id than an earlier one inserted through
-- another connection, and the dispatcher would deliver them out of order.
ALTER SEQUENCE deliveries_id_seq CACHE 1;

-- +goose Down
ALTER SEQUENCE deliveries_id_seq CACHE 100;
