-- name: SessionSettingsGet :one
SELECT current_setting('statement_timeout')::text AS statement_timeout,
       current_setting('idle_in_transaction_session_timeout')::text AS idle_in_transaction_session_timeout,
       current_setting('lock_timeout')::text AS lock_timeout,
       current_setting('synchronous_commit')::text AS synchronous_commit;
