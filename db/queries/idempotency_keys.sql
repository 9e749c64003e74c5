-- name: IdempotencyKeyLookupMany :many
-- The holders of (carrier, key) pairs within the 24 h window. The rows are
-- locked FOR KEY SHARE, which writes WAL and so makes this transaction's
-- commit wait for the synchronous standby, if any: a duplicate is answered
-- only once the standby has everything up to the lock, the holder included
-- (the holder may have committed locally only, its wait for the standby
-- cut short by a statement timeout).
SELECT k.carrier_id, k.idem_key, k.message_id, k.message_received_at, k.deliveries
FROM idempotency_keys k
WHERE (k.carrier_id, k.idem_key) IN (SELECT unnest(@carrier_ids::bigint[]), unnest(@idem_keys::text[]))
  AND k.day >= (now() AT TIME ZONE 'UTC')::date - 1
  AND k.created_at > now() - interval '24 hours'
FOR KEY SHARE OF k;
