-- name: IdempotencyInsertMany :many
-- Claims each (carrier, key) for today unless it is already held today or was
-- taken within the last 24 h yesterday; returns the keys it claimed. Sorted so
-- concurrent batches lock in one order.
INSERT INTO idempotency_keys (carrier_id, idem_key, day, message_id, message_received_at, deliveries)
SELECT u.carrier_id, u.idem_key, (now() AT TIME ZONE 'UTC')::date, u.message_id, u.received_at, u.deliveries
FROM (SELECT unnest(@carrier_ids::bigint[]) AS carrier_id,
             unnest(@idem_keys::text[]) AS idem_key,
             unnest(@message_ids::bigint[]) AS message_id,
             unnest(@received_ats::timestamptz[]) AS received_at,
             unnest(@deliveries::integer[]) AS deliveries) AS u
WHERE NOT EXISTS (
    SELECT 1 FROM idempotency_keys k
    WHERE k.carrier_id = u.carrier_id AND k.idem_key = u.idem_key
      AND k.day = (now() AT TIME ZONE 'UTC')::date - 1
      AND k.created_at > now() - interval '24 hours')
ORDER BY u.carrier_id, u.idem_key
ON CONFLICT DO NOTHING
RETURNING carrier_id, idem_key;

-- name: IdempotencyLookupMany :many
-- The holders of (carrier, key) pairs within the 24 h window.
SELECT k.carrier_id, k.idem_key, k.message_id, k.message_received_at, k.deliveries
FROM idempotency_keys k
WHERE (k.carrier_id, k.idem_key) IN (SELECT unnest(@carrier_ids::bigint[]), unnest(@idem_keys::text[]))
  AND k.day >= (now() AT TIME ZONE 'UTC')::date - 1
  AND k.created_at > now() - interval '24 hours';
