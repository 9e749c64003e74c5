-- name: AuditHeadLock :one
-- The chain's head, locked until the transaction ends: appends and
-- retention take it first, so they form one line.
SELECT last_id, last_at, hash, anchor_id, anchor_hash FROM audit_head FOR UPDATE;

-- name: AuditHeadGet :one
SELECT last_id, last_at, hash, anchor_id, anchor_hash FROM audit_head;

-- name: AuditAnchorSet :exec
UPDATE audit_head SET anchor_id = @anchor_id, anchor_hash = @anchor_hash;

-- name: AuditInsert :exec
-- Inserts an entry and moves the head to it, and adds its audit.entry
-- event to the ops outbox when an ops endpoint names audit.entry among its
-- events (an endpoint of every event type does not get the audit log: it
-- subscribes by name); one statement, under the head's lock.
WITH ins AS (
    INSERT INTO audit_log (id, at, actor_kind, actor_role, actor_user_id, actor_token_id, actor_session_id,
                           actor_merchant_id, actor_carrier_id, actor_name, addr, user_agent, action,
                           target_type, target_id, before, after, result, error, prev_hash, hash)
    VALUES (@id, @at, @actor_kind, @actor_role, @actor_user_id, @actor_token_id, @actor_session_id,
            @actor_merchant_id, @actor_carrier_id, @actor_name, @addr, @user_agent, @action,
            @target_type, @target_id, sqlc.narg(before)::json, sqlc.narg(after)::json, @result, @error,
            @prev_hash, @hash)
), head AS (
    UPDATE audit_head SET last_id = @id, last_at = @at, hash = @hash
)
INSERT INTO ops_events (type, count, data)
SELECT 'audit.entry', 1, sqlc.narg(event)::jsonb
WHERE sqlc.narg(event)::jsonb IS NOT NULL
  AND EXISTS (SELECT 1 FROM ops_endpoints o WHERE 'audit.entry' = ANY(o.events));

-- name: AuditList :many
-- Entries after id after_id in chain order, those matching the filters
-- given (NULL: any). action matches exactly, or as a prefix when it ends
-- with a dot ("endpoint." is every endpoint action).
SELECT id, at, actor_kind, actor_role, actor_user_id, actor_token_id, actor_session_id,
       actor_merchant_id, actor_carrier_id, actor_name, addr, user_agent, action,
       target_type, target_id, coalesce(before::text, '')::text AS before, coalesce(after::text, '')::text AS after, result, error, prev_hash, hash
FROM audit_log
WHERE id > @after_id
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id)::bigint)
  AND (sqlc.narg(since)::timestamptz IS NULL OR at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR at < sqlc.narg(until)::timestamptz)
  AND (sqlc.narg(actor)::text IS NULL OR actor_name = sqlc.narg(actor)::text
       OR actor_kind = sqlc.narg(actor)::text)
  AND (sqlc.narg(action)::text IS NULL OR action = sqlc.narg(action)::text
       OR (right(sqlc.narg(action)::text, 1) = '.' AND starts_with(action, sqlc.narg(action)::text)))
  AND (sqlc.narg(target_type)::text IS NULL OR target_type = sqlc.narg(target_type)::text)
  AND (sqlc.narg(target_id)::text IS NULL OR target_id = sqlc.narg(target_id)::text)
ORDER BY id
LIMIT @max_rows;

-- name: AuditListDesc :many
-- The same selection newest first: entries below before_id (the
-- dashboard's pages).
SELECT id, at, actor_kind, actor_role, actor_user_id, actor_token_id, actor_session_id,
       actor_merchant_id, actor_carrier_id, actor_name, addr, user_agent, action,
       target_type, target_id, coalesce(before::text, '')::text AS before, coalesce(after::text, '')::text AS after, result, error, prev_hash, hash
FROM audit_log
WHERE id < @before_id
  AND (sqlc.narg(since)::timestamptz IS NULL OR at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR at < sqlc.narg(until)::timestamptz)
  AND (sqlc.narg(actor)::text IS NULL OR actor_name = sqlc.narg(actor)::text
       OR actor_kind = sqlc.narg(actor)::text)
  AND (sqlc.narg(action)::text IS NULL OR action = sqlc.narg(action)::text
       OR (right(sqlc.narg(action)::text, 1) = '.' AND starts_with(action, sqlc.narg(action)::text)))
  AND (sqlc.narg(target_type)::text IS NULL OR target_type = sqlc.narg(target_type)::text)
  AND (sqlc.narg(target_id)::text IS NULL OR target_id = sqlc.narg(target_id)::text)
ORDER BY id DESC
LIMIT @max_rows;

-- name: AuditPartitionsEnsure :one
SELECT hookrelay_audit_partitions(sqlc.arg(from_day)::date, sqlc.arg(days)::integer)::integer;

-- name: AuditPartitionList :many
-- The audit_log day tables, oldest first.
SELECT c.relname::text AS name, to_date(right(c.relname, 8), 'YYYYMMDD')::date AS day
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
WHERE c.relkind = 'r' AND c.relname ~ '^audit_log_p[0-9]{8}$'
ORDER BY day;

-- name: AuditLastBefore :one
-- The newest entry before at (the last one a drop of the days before it
-- takes), 0 and NULL when there is none.
SELECT coalesce(max(id), 0)::bigint AS id FROM audit_log WHERE at < @at;

-- name: AuditHashOf :one
SELECT hash FROM audit_log WHERE id = @id;
