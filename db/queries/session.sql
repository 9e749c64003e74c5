-- name: SessionTimeoutsMs :one
-- The session's timeouts in milliseconds, to compare with the configured
-- ones (behind PgBouncer in transaction mode they come from the role).
SELECT (extract(epoch FROM current_setting('statement_timeout')::interval) * 1000)::bigint::text AS statement_timeout,
       (extract(epoch FROM current_setting('idle_in_transaction_session_timeout')::interval) * 1000)::bigint::text AS idle_in_transaction_session_timeout,
       (extract(epoch FROM current_setting('lock_timeout')::interval) * 1000)::bigint::text AS lock_timeout;
