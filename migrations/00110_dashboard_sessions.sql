-- +goose Up
-- Dashboard sessions, one row per login. The cookie carries a random token;
-- the row holds its SHA-256 (token_sha256), so the table cannot be used to
-- log in, and operators name a session by its id, which says nothing of the
-- token. A
-- session is valid while it is neither revoked nor expired and the credential
-- that opened it (credential_fp: the first 8 bytes of its SHA-256) is still
-- the current admin token or the merchant's key. Expired rows are deleted by
-- the maintenance role: this small table is not history.
CREATE TABLE dashboard_sessions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_sha256  bytea NOT NULL UNIQUE,
    kind          text NOT NULL CHECK (kind IN ('admin', 'merchant')),
    merchant_id   bigint REFERENCES merchants (id) ON DELETE CASCADE,
    credential_fp bytea NOT NULL,
    created_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    revoked_at    timestamptz,
    user_agent    text NOT NULL DEFAULT '',
    client_addr   text NOT NULL DEFAULT '',
    CHECK ((kind = 'merchant') = (merchant_id IS NOT NULL))
);

CREATE INDEX dashboard_sessions_merchant_idx ON dashboard_sessions (merchant_id)
    WHERE merchant_id IS NOT NULL;
CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_at);

-- +goose Down
DROP TABLE dashboard_sessions;
