-- +goose Up
-- An audit entry appended in one statement: hookrelay_audit_append locks the
-- chain's head, numbers and dates the entry after it, hashes it and inserts
-- it, moves the head, and queues its audit.entry operational event, so that
-- an action records its entry in one round trip, sent with its COMMIT.
--
-- The hash is SHA-256(prev_hash || the entry's canonical encoding), the
-- encoding package audit's Encode writes and `hookrelay audit verify`
-- checks: "hookrelay-audit-v1" and then each field in a fixed order, as its
-- length in bytes (an unsigned LEB128 varint) and its UTF-8 bytes; integers
-- in decimal, the time in UTC as 2006-01-02T15:04:05.000000Z.

-- +goose StatementBegin
CREATE FUNCTION hookrelay_audit_field(t text) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
    b   bytea := convert_to(t, 'UTF8');
    n   bigint := octet_length(b);
    len bytea := ''::bytea;
BEGIN
    WHILE n >= 128 LOOP
        len := len || set_byte('\x00'::bytea, 0, ((n & 127) | 128)::integer);
        n := n >> 7;
    END LOOP;
    RETURN len || set_byte('\x00'::bytea, 0, n::integer) || b;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION hookrelay_audit_append(
    p_at timestamptz, p_actor_kind text, p_actor_role text, p_actor_user_id bigint, p_actor_token_id bigint,
    p_actor_session_id bigint, p_actor_merchant_id bigint, p_actor_carrier_id bigint, p_actor_name text,
    p_addr text, p_user_agent text, p_action text, p_target_type text, p_target_id text,
    p_before text, p_after text, p_result text, p_error text, p_event jsonb,
    OUT id bigint, OUT at timestamptz, OUT prev_hash bytea, OUT hash bytea)
LANGUAGE plpgsql AS $fn$
DECLARE
    h      audit_head;
    v_id   bigint;
    v_at   timestamptz;
    v_text text;
    v_hash bytea;
BEGIN
    -- The head's lock orders the appends (and retention) into one line.
    SELECT * INTO h FROM audit_head FOR UPDATE;
    v_id := h.last_id + 1;
    -- at never goes back along the chain, so a day holds a contiguous range.
    v_at := greatest(p_at, h.last_at);
    v_text := to_char(v_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_hash := sha256(h.hash
        || hookrelay_audit_field('hookrelay-audit-v1')
        || hookrelay_audit_field(v_id::text)
        || hookrelay_audit_field(v_text)
        || hookrelay_audit_field(p_actor_kind)
        || hookrelay_audit_field(p_actor_role)
        || hookrelay_audit_field(p_actor_user_id::text)
        || hookrelay_audit_field(p_actor_token_id::text)
        || hookrelay_audit_field(p_actor_session_id::text)
        || hookrelay_audit_field(p_actor_merchant_id::text)
        || hookrelay_audit_field(p_actor_carrier_id::text)
        || hookrelay_audit_field(p_actor_name)
        || hookrelay_audit_field(p_addr)
        || hookrelay_audit_field(p_user_agent)
        || hookrelay_audit_field(p_action)
        || hookrelay_audit_field(p_target_type)
        || hookrelay_audit_field(p_target_id)
        || hookrelay_audit_field(coalesce(p_before, ''))
        || hookrelay_audit_field(coalesce(p_after, ''))
        || hookrelay_audit_field(p_result)
        || hookrelay_audit_field(p_error));
    INSERT INTO audit_log (id, at, actor_kind, actor_role, actor_user_id, actor_token_id, actor_session_id,
                           actor_merchant_id, actor_carrier_id, actor_name, addr, user_agent, action,
                           target_type, target_id, before, after, result, error, prev_hash, hash)
    VALUES (v_id, v_at, p_actor_kind, p_actor_role, p_actor_user_id, p_actor_token_id, p_actor_session_id,
            p_actor_merchant_id, p_actor_carrier_id, p_actor_name, p_addr, p_user_agent, p_action,
            p_target_type, p_target_id, nullif(p_before, '')::json, nullif(p_after, '')::json, p_result, p_error,
            h.hash, v_hash);
    UPDATE audit_head SET last_id = v_id, last_at = v_at, hash = v_hash;
    -- The audit.entry event goes to the ops outbox only when an ops
    -- endpoint names audit.entry among its events; p_event is the entry as
    -- the export shows it, less what the append decides.
    IF p_event IS NOT NULL AND EXISTS (SELECT 1 FROM ops_endpoints o WHERE 'audit.entry' = ANY (o.events)) THEN
        INSERT INTO ops_events (type, count, data)
        VALUES ('audit.entry', 1, p_event || jsonb_build_object(
            'id', v_id::text, 'at', v_text, 'prev_hash', encode(h.hash, 'hex'), 'hash', encode(v_hash, 'hex')));
    END IF;
    id := v_id;
    at := v_at;
    prev_hash := h.hash;
    hash := v_hash;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION hookrelay_audit_append(timestamptz, text, text, bigint, bigint, bigint, bigint, bigint, text, text,
                                     text, text, text, text, text, text, text, text, jsonb);
DROP FUNCTION hookrelay_audit_field(text);
