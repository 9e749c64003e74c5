-- The wake-up channel between processes: the API announces on it that a group
-- commit stored deliveries, and every dispatcher LISTENs, so an idle
-- dispatcher in another process claims them at once instead of after its idle
-- pause. A hint only: a notification lost (no listener connected, a
-- dispatcher reconnecting) costs at most that pause.

-- name: DueNotify :exec
-- Sent in its own transaction, after the group commit, never inside it:
-- PostgreSQL serialises the commits of notifying transactions (one at a time
-- in the whole cluster, each holding the lock through its WAL flush). The
-- commit need not wait for that flush either: a notification lost in a crash
-- is a wake-up missed, not a delivery. The payload (db.Announcement) is the
-- sender's token, so a dispatcher can tell its own process's announcements
-- (it is woken directly) from other processes', and the logical queues that
-- got deliveries, so only the claim loops holding them are woken.
SELECT set_config('synchronous_commit', 'off', true), pg_notify('hookrelay_due', sqlc.arg(payload)::text);

-- name: DueListen :exec
LISTEN hookrelay_due;

-- name: ConfigListen :exec
-- The configuration channel: the trigger of migration 00120 announces each
-- new configuration version on it (the payload is the version).
LISTEN hookrelay_config;
