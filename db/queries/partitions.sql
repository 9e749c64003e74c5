-- name: PartitionsEnsure :one
SELECT hookrelay_ensure_partitions(sqlc.arg(from_day)::date, sqlc.arg(days)::integer)::integer;
