-- +goose Up
-- Team access: the operators' own accounts, their invitations and the API
-- tokens of users and services. Roles, weakest first: viewer, support,
-- operator, admin, owner. scope ({"carriers": [ids], "merchants": [ids]},
-- empty: everything) narrows what a user or token sees.
CREATE TABLE users (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email          text NOT NULL,
    name           text NOT NULL DEFAULT '',
    role           text NOT NULL CHECK (role IN ('viewer', 'support', 'operator', 'admin', 'owner')),
    scope          jsonb NOT NULL DEFAULT '{}',
    -- An argon2id hash in the PHC string form; '' for a user who signs in
    -- only through single sign-on.
    password_hash  text NOT NULL DEFAULT '',
    -- The TOTP secret, sealed like the other secrets ('' when not enrolled).
    totp_secret    text NOT NULL DEFAULT '',
    -- The time step of the last TOTP code accepted: a code works once.
    totp_last_step bigint NOT NULL DEFAULT 0,
    auth_source    text NOT NULL CHECK (auth_source IN ('password', 'sso')),
    deactivated_at timestamptz,
    last_login_at  timestamptz,
    created_at     timestamptz NOT NULL
);

-- One account per address, whatever its case.
CREATE UNIQUE INDEX users_email_idx ON users (lower(email));

-- Invitations: single-use links, like the portal's. The row holds only the
-- SHA-256 of the link's random token; accepting sets used_at in the
-- transaction that creates the user.
CREATE TABLE user_invites (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_sha256 bytea NOT NULL UNIQUE,
    email        text NOT NULL,
    role         text NOT NULL CHECK (role IN ('viewer', 'support', 'operator', 'admin', 'owner')),
    scope        jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz
);

CREATE INDEX user_invites_expires_idx ON user_invites (expires_at);

-- API tokens of a user (user_id) or of a service (user_id NULL). The row
-- holds the token's SHA-256 and its first characters to tell tokens apart.
-- A user's token acts with the lesser of its role and its user's current
-- role, and stops with its user's deactivation.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_sha256 bytea NOT NULL UNIQUE,
    prefix       text NOT NULL,
    name         text NOT NULL,
    user_id      bigint REFERENCES users (id) ON DELETE CASCADE,
    role         text NOT NULL CHECK (role IN ('viewer', 'support', 'operator', 'admin', 'owner')),
    scope        jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_tokens_user_idx ON api_tokens (user_id) WHERE user_id IS NOT NULL;

-- A user's dashboard sessions: kind 'user' with the user's id. They end
-- with the user's deactivation (the session look-up reads the user's row).
ALTER TABLE dashboard_sessions
    ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE CASCADE,
    DROP CONSTRAINT dashboard_sessions_kind_check,
    ADD CONSTRAINT dashboard_sessions_kind_check CHECK (kind IN ('admin', 'merchant', 'user')),
    ADD CONSTRAINT dashboard_sessions_user_check CHECK ((kind = 'user') = (user_id IS NOT NULL));

CREATE INDEX dashboard_sessions_user_idx ON dashboard_sessions (user_id) WHERE user_id IS NOT NULL;

-- +goose Down
DELETE FROM dashboard_sessions WHERE kind = 'user';
ALTER TABLE dashboard_sessions
    DROP CONSTRAINT dashboard_sessions_user_check,
    DROP CONSTRAINT dashboard_sessions_kind_check,
    ADD CONSTRAINT dashboard_sessions_kind_check CHECK (kind IN ('admin', 'merchant')),
    DROP COLUMN user_id;
DROP TABLE api_tokens;
DROP TABLE user_invites;
DROP TABLE users;
