-- name: AttemptListByDelivery :many
-- The first @lim attempts of one delivery, oldest first. Time orders them, not
-- the attempt number: a dead letter retried by an operator starts again at
-- attempt 1. Each day partition's (delivery_id, attempt) index finds them.
SELECT * FROM delivery_attempts
WHERE delivery_id = sqlc.arg(delivery_id)::bigint
ORDER BY attempted_at, attempt
LIMIT @lim;

-- name: AttemptListRecentByEndpoint :many
-- The newest attempts to one endpoint, keyset below (attempted_at, delivery_id).
SELECT * FROM delivery_attempts
WHERE endpoint_id = @endpoint_id
  AND attempted_at >= @since
  AND attempted_at < sqlc.arg(before_at)::timestamptz
ORDER BY attempted_at DESC LIMIT @lim;

-- name: AttemptListDeliveredByEndpoint :many
-- Successful attempts of an endpoint, newest first, keyset on (attempted_at,
-- delivery_id), each with its message's ordering key (one primary key look-up
-- in the message's day partition per row).
SELECT sqlc.embed(a), m.ordering_key FROM delivery_attempts a
JOIN messages m ON m.id = a.message_id AND m.received_at = a.message_received_at
WHERE a.endpoint_id = @endpoint_id AND a.outcome = 'success'
  AND (a.attempted_at, a.delivery_id) < (@before_at::timestamptz, @before_id::bigint)
ORDER BY a.attempted_at DESC, a.delivery_id DESC LIMIT @lim;

-- name: AttemptHistogram :many
-- Delivery outcomes in [from, to) (BRIN on attempted_at) as a histogram: one
-- row per outcome class and bucket of the successful attempts' end-to-end
-- latency (received → attempt started + its latency). Bucket b holds
-- latencies in [1.01^b, 1.01^(b+1)) ms, so percentiles merged from the
-- buckets of several windows are within 0.5 % of the exact ones; failed
-- attempts are counted in bucket 0 of success = false.
SELECT (outcome = 'success')::bool AS success,
       (CASE WHEN outcome = 'success'
             THEN floor(ln(greatest(e2e_ms, 0.001)) / ln(1.01))
             ELSE 0 END)::integer AS bucket,
       count(*)::bigint AS n
FROM (SELECT outcome,
             extract(epoch FROM attempted_at - message_received_at)::float8 * 1000 + latency_ms AS e2e_ms
      FROM delivery_attempts
      WHERE attempted_at >= sqlc.arg(from_time)::timestamptz
        AND attempted_at < sqlc.arg(to_time)::timestamptz) a
GROUP BY 1, 2;
