-- name: CarrierRefusalInsertMany :execrows
-- One batch of the refusal log in one statement.
INSERT INTO carrier_refusals (carrier_id, received_at, status, reason, message, headers, body_excerpt, body_size, dropped)
SELECT unnest(sqlc.arg(carrier_ids)::bigint[]), unnest(sqlc.arg(received_ats)::timestamptz[]),
       unnest(sqlc.arg(statuses)::smallint[]), unnest(sqlc.arg(reasons)::text[]), unnest(sqlc.arg(messages)::text[]),
       unnest(sqlc.arg(headers)::jsonb[]), unnest(sqlc.arg(body_excerpts)::text[]), unnest(sqlc.arg(body_sizes)::integer[]),
       unnest(sqlc.arg(dropped)::integer[]);

-- name: CarrierRefusalList :many
-- A carrier's refusals in [since, until), newest first, keyset below
-- (before_at, before_id); reason '' for every reason. The (carrier_id,
-- received_at, id) index of each day partition reads them in order.
SELECT id, carrier_id, received_at, status, reason, message, headers, body_excerpt, body_size, dropped
FROM carrier_refusals
WHERE carrier_id = @carrier_id
  AND received_at >= sqlc.arg(since)::timestamptz AND received_at < sqlc.arg(until)::timestamptz
  AND (sqlc.arg(reason)::text = '' OR reason = sqlc.arg(reason)::text)
  AND (received_at, id) < (sqlc.arg(before_at)::timestamptz, sqlc.arg(before_id)::bigint)
ORDER BY received_at DESC, id DESC
LIMIT @lim;
