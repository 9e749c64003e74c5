-- name: EndpointInsert :one
INSERT INTO endpoints (merchant_id, url, description, carrier_ids, event_types, max_in_flight,
                       rate_limit_per_sec, payload_mode, retry_schedule_ms, timeout_ms, ordering,
                       headers, auth, filter, signature, public_key, send_traceparent, type,
                       batch_max_events, batch_max_wait_ms, format)
VALUES (@merchant_id, @url, @description, @carrier_ids, @event_types, @max_in_flight,
        @rate_limit_per_sec, @payload_mode, @retry_schedule_ms, @timeout_ms, @ordering,
        @headers, @auth, @filter, @signature, @public_key, @send_traceparent, @type,
        @batch_max_events, @batch_max_wait_ms, @format)
RETURNING *;

-- name: EndpointGet :one
SELECT * FROM endpoints WHERE id = $1 AND status <> 'deleted';

-- name: EndpointList :many
SELECT * FROM endpoints
WHERE status <> 'deleted'
  AND (sqlc.arg(merchant_id)::bigint = 0 OR merchant_id = sqlc.arg(merchant_id)::bigint)
  AND id > @after_id
ORDER BY id LIMIT @lim;

-- name: EndpointListWithHealth :many
-- Endpoints (not deleted) with their health, keyset by id; merchant_id 0 = all.
SELECT e.id, e.merchant_id, e.url, e.description, e.status, e.disabled_reason,
       e.payload_mode, e.ordering, e.signature, e.created_at, e.type,
       COALESCE(h.consecutive_failures, 0)::integer AS consecutive_failures,
       COALESCE(h.circuit_state, 'closed')::text AS circuit_state,
       h.circuit_open_until, h.failing_since, h.last_success_at, h.last_failure_at,
       COALESCE(h.last_error, '')::text AS last_error,
       h.unreadable_since, COALESCE(h.unreadable_reason, '')::text AS unreadable_reason
FROM endpoints e
LEFT JOIN endpoint_health h ON h.endpoint_id = e.id
WHERE e.status <> 'deleted'
  AND (sqlc.arg(merchant_id)::bigint = 0 OR e.merchant_id = sqlc.arg(merchant_id)::bigint)
  AND e.id > @after_id
ORDER BY e.id LIMIT @lim;

-- name: EndpointListLive :many
-- Every endpoint that can receive deliveries (enabled or disabled): the ingest
-- fan-out cache (ordering: whether its deliveries are stored ordered; filter:
-- the content filter).
SELECT id, merchant_id, carrier_ids, event_types, status, ordering, filter, format FROM endpoints
WHERE status <> 'deleted' ORDER BY id;

-- name: EndpointListForDispatch :many
-- What the dispatcher needs to send to the given endpoints: delivery settings,
-- every secret that may sign now (newest first) and the circuit state.
SELECT e.id, e.url, e.status, e.max_in_flight, e.rate_limit_per_sec, e.payload_mode,
       e.retry_schedule_ms, e.timeout_ms, e.headers, e.auth, e.send_traceparent,
       e.batch_max_events, e.batch_max_wait_ms, e.format,
       coalesce((SELECT array_agg(s.secret ORDER BY s.id DESC) FROM endpoint_secrets s
                 WHERE s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())),
                '{}')::text[] AS secrets,
       coalesce(h.consecutive_failures, 0)::integer AS consecutive_failures,
       coalesce(h.circuit_state, 'closed')::text AS circuit_state,
       (h.unreadable_since IS NOT NULL)::boolean AS unreadable_marked
FROM endpoints e
LEFT JOIN endpoint_health h ON h.endpoint_id = e.id
WHERE e.id = ANY(sqlc.arg(ids)::bigint[]);

-- name: EndpointUpdate :one
UPDATE endpoints SET
    url                = @url,
    description        = @description,
    carrier_ids        = @carrier_ids,
    event_types        = @event_types,
    max_in_flight      = @max_in_flight,
    rate_limit_per_sec = @rate_limit_per_sec,
    payload_mode       = @payload_mode,
    retry_schedule_ms  = @retry_schedule_ms,
    timeout_ms         = @timeout_ms,
    ordering           = @ordering,
    -- No headers or credentials keep the stored ones, sealed as they are
    -- (values this process cannot open, left for when they can be).
    headers            = coalesce(sqlc.narg(headers)::jsonb, headers),
    auth               = coalesce(sqlc.narg(auth)::text, auth),
    filter             = @filter,
    signature          = @signature,
    -- A new key (a change of scheme) brings its public key; none keeps it.
    public_key         = coalesce(sqlc.narg(public_key), public_key),
    send_traceparent   = @send_traceparent,
    batch_max_events   = @batch_max_events,
    batch_max_wait_ms  = @batch_max_wait_ms,
    format             = @format,
    updated_at         = now()
WHERE id = @id AND status <> 'deleted'
RETURNING *;

-- name: EndpointSetStatus :one
UPDATE endpoints SET status = @status, disabled_reason = @disabled_reason, updated_at = now()
WHERE id = @id AND status <> 'deleted'
RETURNING *;

-- name: EndpointCountByStatus :many
SELECT status, count(*)::bigint AS n FROM endpoints GROUP BY status ORDER BY status;

-- name: EndpointStatusLock :one
-- The status before a change, locked until the change commits (so an
-- enable or disable reports a transition once, whoever else changes it).
SELECT status FROM endpoints WHERE id = @id AND status <> 'deleted' FOR UPDATE;

-- name: EndpointListUnsealed :many
-- Endpoints, by id after after_id, holding a header value or credentials
-- not sealed under the key whose sealed values start with prefix
-- (plaintext, or an older key): what a re-seal pass rewrites.
SELECT id, headers, auth FROM endpoints
WHERE id > @after_id
  AND ((auth <> '' AND NOT starts_with(auth, @prefix::text))
       OR EXISTS (SELECT 1 FROM jsonb_each_text(headers) h WHERE NOT starts_with(h.value, @prefix::text)))
ORDER BY id LIMIT @lim;

-- name: EndpointResealMany :execrows
-- Replaces headers and auth of each endpoint still holding what the re-seal
-- pass read (a concurrent change wins: the pass sees that row again).
UPDATE endpoints e SET headers = u.new_headers, auth = u.new_auth
FROM (SELECT unnest(sqlc.arg(ids)::bigint[]) AS id,
             unnest(sqlc.arg(old_headers)::jsonb[]) AS old_headers,
             unnest(sqlc.arg(old_auth)::text[]) AS old_auth,
             unnest(sqlc.arg(new_headers)::jsonb[]) AS new_headers,
             unnest(sqlc.arg(new_auth)::text[]) AS new_auth) u
WHERE e.id = u.id AND e.headers = u.old_headers AND e.auth = u.old_auth;
