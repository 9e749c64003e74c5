-- name: CarrierStatsAdd :exec
-- Adds one process's counts of a few seconds to the rows of their carrier
-- and minute: accepted and the latency buckets summed, the refusals summed
-- per reason, the last callback the later of both.
INSERT INTO carrier_stats AS s (carrier_id, minute, accepted, refused, latency, last_at)
SELECT x.carrier_id, x.minute, x.accepted, x.refused, x.latency::bigint[], x.last_at
FROM (SELECT unnest(sqlc.arg(carrier_ids)::bigint[]) AS carrier_id, unnest(sqlc.arg(minutes)::timestamptz[]) AS minute,
             unnest(sqlc.arg(accepted)::bigint[]) AS accepted, unnest(sqlc.arg(refused)::jsonb[]) AS refused,
             unnest(sqlc.arg(latencies)::text[]) AS latency, unnest(sqlc.arg(last_ats)::timestamptz[]) AS last_at) AS x
ON CONFLICT (carrier_id, minute) DO UPDATE SET
    accepted = s.accepted + excluded.accepted,
    refused = (SELECT coalesce(jsonb_object_agg(t.key, t.total), '{}'::jsonb)
               FROM (SELECT u.key, sum(u.value::bigint) AS total
                     FROM (SELECT key, value FROM jsonb_each_text(s.refused)
                           UNION ALL SELECT key, value FROM jsonb_each_text(excluded.refused)) AS u
                     GROUP BY u.key) AS t),
    latency = (SELECT coalesce(array_agg(coalesce(s.latency[i], 0) + coalesce(excluded.latency[i], 0) ORDER BY i), '{}')
               FROM generate_series(1, greatest(cardinality(s.latency), cardinality(excluded.latency))) AS i),
    last_at = greatest(s.last_at, excluded.last_at);

-- name: CarrierStatsSince :many
-- The rows of the given carriers (every carrier when empty) from since on.
SELECT carrier_id, minute, accepted, refused, latency, last_at FROM carrier_stats
WHERE minute >= sqlc.arg(since)::timestamptz
  AND (cardinality(sqlc.arg(carrier_ids)::bigint[]) = 0 OR carrier_id = ANY(sqlc.arg(carrier_ids)::bigint[]))
ORDER BY carrier_id, minute;

-- name: CarrierStatsTrim :execrows
DELETE FROM carrier_stats WHERE minute < sqlc.arg(before)::timestamptz;

-- name: CarrierStatsLastCallbacks :many
-- Each carrier's last callback (accepted or refused) within the rows kept.
SELECT carrier_id, max(last_at)::timestamptz AS last_at FROM carrier_stats GROUP BY carrier_id;
