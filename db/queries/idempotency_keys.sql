-- name: IdempotencyKeyLookupMany :many
-- The holders of (carrier, key) pairs within the 24 h window.
SELECT k.carrier_id, k.idem_key, k.message_id, k.message_received_at, k.deliveries
FROM idempotency_keys k
WHERE (k.carrier_id, k.idem_key) IN (SELECT unnest(@carrier_ids::bigint[]), unnest(@idem_keys::text[]))
  AND k.day >= (now() AT TIME ZONE 'UTC')::date - 1
  AND k.created_at > now() - interval '24 hours';
