-- name: OpsEndpointInsert :one
INSERT INTO ops_endpoints (url, events, description, secret)
VALUES (@url, @events::text[], @description, @secret)
RETURNING *;

-- name: OpsEndpointList :many
SELECT * FROM ops_endpoints ORDER BY id;

-- name: OpsEndpointDelete :execrows
DELETE FROM ops_endpoints WHERE id = @id;

-- name: OpsEventAdd :exec
-- Adds an event to the outbox, unless no ops endpoint wants its type: every
-- writer calls it in the transaction of the change it reports.
INSERT INTO ops_events (type, endpoint_id, count, data)
SELECT @type::text, sqlc.narg(endpoint_id)::bigint, @count::integer, @data::jsonb
WHERE EXISTS (SELECT 1 FROM ops_endpoints o
              WHERE o.events = '{}' OR @type::text = ANY(o.events));

-- name: OpsEventDeadLettered :exec
-- Adds one delivery.dead_lettered row per endpoint of an acknowledgement's
-- dead letters, with their count (the ops loop coalesces the rows of an
-- endpoint into one event per window).
INSERT INTO ops_events (type, endpoint_id, count, data)
SELECT 'delivery.dead_lettered', x.endpoint_id, count(*)::integer,
       jsonb_build_object('endpoint_id', x.endpoint_id::text,
                          'merchant_id', coalesce(max(e.merchant_id), 0)::text,
                          'last_error', (array_agg(x.error))[count(*)])
FROM (SELECT unnest(sqlc.arg(endpoint_ids)::bigint[]) AS endpoint_id,
             unnest(sqlc.arg(errors)::text[]) AS error) x
LEFT JOIN endpoints e ON e.id = x.endpoint_id
WHERE EXISTS (SELECT 1 FROM ops_endpoints o
              WHERE o.events = '{}' OR 'delivery.dead_lettered' = ANY(o.events))
GROUP BY x.endpoint_id;

-- name: OpsFanoutLock :one
-- One process at a time turns the outbox into messages (coalescing needs
-- every row of an endpoint); the others skip their turn.
SELECT pg_try_advisory_xact_lock(7268150)::boolean AS locked;

-- name: OpsEventTake :many
-- Deletes and returns outbox rows ready to be sent: every row but dead
-- letters, and the dead letters of endpoints whose first one is older than
-- @coalesce (their window is over).
DELETE FROM ops_events WHERE id IN (
    SELECT ev.id FROM ops_events ev
    WHERE ev.type <> 'delivery.dead_lettered'
       OR ev.endpoint_id IN (SELECT d.endpoint_id FROM ops_events d
                             WHERE d.type = 'delivery.dead_lettered'
                             GROUP BY d.endpoint_id
                             HAVING min(d.created_at) <= now() - sqlc.arg(coalesce)::interval)
    ORDER BY ev.id
    LIMIT sqlc.arg(max_rows)::integer)
RETURNING id, type, endpoint_id, count, data, created_at;

-- name: OpsDue :one
-- Whether a round of operational webhooks has work: an outbox row
-- OpsEventTake would take (the same conditions), or a message due for an
-- attempt. One read instead of the round's transaction when none has.
SELECT (EXISTS (
           SELECT 1 FROM ops_events ev
           WHERE ev.type <> 'delivery.dead_lettered'
              OR ev.endpoint_id IN (SELECT d.endpoint_id FROM ops_events d
                                    WHERE d.type = 'delivery.dead_lettered'
                                    GROUP BY d.endpoint_id
                                    HAVING min(d.created_at) <= now() - sqlc.arg(coalesce)::interval))
       OR EXISTS (SELECT 1 FROM ops_deliveries q WHERE q.next_attempt_at <= now()))::boolean AS due;

-- name: OpsDeliveryInsert :exec
-- Queues each message to every ops endpoint that wants its type (audit
-- entries only to those that name audit.entry).
INSERT INTO ops_deliveries (ops_endpoint_id, msg_id, payload)
SELECT o.id, x.msg_id, x.payload
FROM (SELECT unnest(sqlc.arg(types)::text[]) AS type,
             unnest(sqlc.arg(msg_ids)::text[]) AS msg_id,
             unnest(sqlc.arg(payloads)::text[]) AS payload) x
JOIN ops_endpoints o ON (o.events = '{}' AND x.type <> 'audit.entry') OR x.type = ANY(o.events);

-- name: OpsDeliveryClaim :many
-- Takes due messages for one attempt: they stay invisible for @lease (the
-- attempt's timeout and more), so a process that dies mid-attempt only
-- delays them.
UPDATE ops_deliveries d SET attempts = d.attempts + 1,
    next_attempt_at = now() + sqlc.arg(lease)::interval
FROM ops_endpoints o
WHERE o.id = d.ops_endpoint_id AND d.id IN (
    SELECT q.id FROM ops_deliveries q WHERE q.next_attempt_at <= now()
    ORDER BY q.next_attempt_at LIMIT sqlc.arg(max_rows)::integer
    FOR UPDATE SKIP LOCKED)
RETURNING d.id, d.msg_id, d.payload, d.attempts, d.created_at, o.url, o.secret;

-- name: OpsDeliveryDelete :exec
DELETE FROM ops_deliveries WHERE id = @id;

-- name: OpsDeliveryRetryLater :exec
UPDATE ops_deliveries SET next_attempt_at = now() + sqlc.arg(delay)::interval, last_error = @last_error
WHERE id = @id;

-- name: OpsEndpointSecretListUnsealed :many
-- Secrets, by ops endpoint id after after_id, not sealed under the key
-- whose sealed values start with prefix (plaintext, or an older key).
SELECT id, secret FROM ops_endpoints
WHERE id > @after_id AND NOT starts_with(secret, @prefix::text)
ORDER BY id LIMIT @lim;

-- name: OpsEndpointSecretResealMany :execrows
-- Replaces each secret still holding what the re-seal pass read.
UPDATE ops_endpoints o SET secret = u.new_secret
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(old_secrets)::text[]) AS old_secret,
             unnest(sqlc.arg(new_secrets)::text[]) AS new_secret) u
WHERE o.id = u.id AND o.secret = u.old_secret;
