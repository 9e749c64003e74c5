-- +goose Up
-- A carrier's lifecycle and inbound checks.
--   signature: how its callbacks are signed (scheme, algorithm, where the
--     signature is...), without the secret, which stays sealed in
--     signing_secret. NULL with a signing_secret is the original scheme
--     (X-Signature: sha256=<hex HMAC-SHA256 of the body>).
--   allowed_cidrs: the source addresses its callbacks may come from (empty:
--     any).
--   disabled_at: set while an operator has disabled it (its callbacks are
--     refused with 403).
--   deleted_at: set when it is deleted. The row stays so that the callbacks
--     it sent before are still delivered under its name; its keys stop
--     working and it leaves every list. Its name is free again.
ALTER TABLE carriers
    ADD COLUMN signature     jsonb,
    ADD COLUMN allowed_cidrs text[] NOT NULL DEFAULT '{}',
    ADD COLUMN disabled_at   timestamptz,
    ADD COLUMN deleted_at    timestamptz,
    ADD COLUMN updated_at    timestamptz NOT NULL DEFAULT now();

ALTER TABLE carriers DROP CONSTRAINT carriers_name_key;
CREATE UNIQUE INDEX carriers_name_key ON carriers (name) WHERE deleted_at IS NULL;

-- carrier_previous_keys: the API keys a rotation replaced, accepted until
-- expires_at (the rotation's overlap). Expired rows are ignored, and deleted
-- by the next rotation of the carrier.
CREATE TABLE carrier_previous_keys (
    api_key_hash   bytea PRIMARY KEY,
    carrier_id     bigint NOT NULL REFERENCES carriers (id) ON DELETE CASCADE,
    api_key_prefix text NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX carrier_previous_keys_carrier_idx ON carrier_previous_keys (carrier_id);

CREATE TRIGGER carrier_previous_keys_config_changed AFTER INSERT OR UPDATE OR DELETE ON carrier_previous_keys
    FOR EACH ROW EXECUTE FUNCTION hookrelay_config_changed();

-- +goose Down
DROP TABLE carrier_previous_keys;
DROP INDEX carriers_name_key;
DELETE FROM carriers WHERE deleted_at IS NOT NULL;
ALTER TABLE carriers ADD CONSTRAINT carriers_name_key UNIQUE (name);
ALTER TABLE carriers
    DROP COLUMN updated_at,
    DROP COLUMN deleted_at,
    DROP COLUMN disabled_at,
    DROP COLUMN allowed_cidrs,
    DROP COLUMN signature;
