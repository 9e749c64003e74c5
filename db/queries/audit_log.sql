-- name: AuditHeadLock :one
-- The chain's head, locked until the transaction ends: appends and
-- retention take it first, so they form one line.
SELECT last_id, last_at, hash, anchor_id, anchor_hash FROM audit_head FOR UPDATE;

-- name: AuditHeadGet :one
SELECT last_id, last_at, hash, anchor_id, anchor_hash FROM audit_head;

-- name: AuditAnchorSet :exec
UPDATE audit_head SET anchor_id = @anchor_id, anchor_hash = @anchor_hash;

-- name: AuditAppend :exec
-- Appends an entry after the head, under the head's lock, and moves the
-- head (hookrelay_audit_append: it numbers, dates, hashes and inserts the
-- entry and queues its audit.entry event).
SELECT FROM hookrelay_audit_append(sqlc.arg(at)::timestamptz, sqlc.arg(actor_kind)::text, sqlc.arg(actor_role)::text,
    sqlc.arg(actor_user_id)::bigint, sqlc.arg(actor_token_id)::bigint, sqlc.arg(actor_session_id)::bigint,
    sqlc.arg(actor_merchant_id)::bigint, sqlc.arg(actor_carrier_id)::bigint, sqlc.arg(actor_name)::text,
    sqlc.arg(addr)::text, sqlc.arg(user_agent)::text, sqlc.arg(action)::text, sqlc.arg(target_type)::text,
    sqlc.arg(target_id)::text, sqlc.arg(before)::text, sqlc.arg(after)::text, sqlc.arg(result)::text,
    sqlc.arg(error)::text, sqlc.narg(event)::jsonb);

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
