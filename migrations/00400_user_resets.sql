-- +goose Up
-- Password reset links: an owner issues a single-use link for an existing
-- password user. They are invitation rows that name their user (email and
-- role copied from the user, for the record); the invitation page ignores
-- them and the reset page reads only them. Expired ones go with the
-- invitations' retention.
ALTER TABLE user_invites ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE CASCADE;

CREATE INDEX user_invites_user_idx ON user_invites (user_id) WHERE user_id IS NOT NULL;

-- +goose Down
DELETE FROM user_invites WHERE user_id IS NOT NULL;
DROP INDEX user_invites_user_idx;
ALTER TABLE user_invites DROP COLUMN user_id;
