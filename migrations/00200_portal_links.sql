-- +goose Up
-- Portal links: single-use magic links into the merchant portal, issued by
-- the operator (POST /v1/merchants/{id}/portal-links). Like a dashboard
-- session, the row holds only the SHA-256 of the link's random token. A link
-- opens at most one session: redeeming it sets used_at in the statement that
-- inserts the session, so two clicks cannot both win. credential_fp is the
-- merchant key's fingerprint when the link was made: rotating the key voids
-- the links not yet used, as it ends the sessions. Expired rows are deleted
-- by the maintenance role with the expired sessions.
CREATE TABLE portal_links (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_sha256  bytea NOT NULL UNIQUE,
    merchant_id   bigint NOT NULL REFERENCES merchants (id) ON DELETE CASCADE,
    read_only     boolean NOT NULL,
    credential_fp bytea NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    used_at       timestamptz
);

CREATE INDEX portal_links_expires_idx ON portal_links (expires_at);

-- A read-only session (opened by a read-only portal link) may look but not
-- change anything; the dashboard refuses its every action. portal marks the
-- sessions a portal link opened: their cookie may be sent inside an iframe
-- (HOOKRELAY_PORTAL_FRAME_ANCESTORS), and their logout stays in the portal.
ALTER TABLE dashboard_sessions
    ADD COLUMN read_only boolean NOT NULL DEFAULT false,
    ADD COLUMN portal    boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE dashboard_sessions DROP COLUMN read_only, DROP COLUMN portal;
DROP TABLE portal_links;
