-- +goose Up
-- The configuration version: one number, raised in the transaction of every
-- change to carriers, merchants, endpoints or endpoint secrets (whatever
-- statement makes it, so no write path can forget) and announced on the
-- hookrelay_config channel at its commit. A process whose cached
-- configuration is older than the version it sees reloads it before a
-- delivery attempt starts: the claim statement returns the version read in
-- its own snapshot, so a claim that sees a delivery stored after a change
-- also sees the change's version.
CREATE TABLE config_version (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint NOT NULL
);
INSERT INTO config_version (one, version) VALUES (true, 1);

-- Once per transaction (a transaction-local setting remembers it): a change
-- of a thousand rows is one version, one notification. Notifying commits
-- are serialised cluster-wide; configuration changes are rare.
-- +goose StatementBegin
CREATE FUNCTION hookrelay_config_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
    v bigint;
BEGIN
    IF current_setting('hookrelay.config_version_raised', true) IS DISTINCT FROM 'on' THEN
        UPDATE config_version SET version = version + 1 RETURNING version INTO v;
        PERFORM pg_notify('hookrelay_config', v::text);
        PERFORM set_config('hookrelay.config_version_raised', 'on', true);
    END IF;
    RETURN NULL;
END
$fn$;
-- +goose StatementEnd

-- Row triggers, not statement triggers: a statement that changes no row
-- (the acknowledgement's disable step, nearly always) raises nothing.
CREATE TRIGGER carriers_config_changed AFTER INSERT OR UPDATE OR DELETE ON carriers
    FOR EACH ROW EXECUTE FUNCTION hookrelay_config_changed();
CREATE TRIGGER merchants_config_changed AFTER INSERT OR UPDATE OR DELETE ON merchants
    FOR EACH ROW EXECUTE FUNCTION hookrelay_config_changed();
CREATE TRIGGER endpoints_config_changed AFTER INSERT OR UPDATE OR DELETE ON endpoints
    FOR EACH ROW EXECUTE FUNCTION hookrelay_config_changed();
CREATE TRIGGER endpoint_secrets_config_changed AFTER INSERT OR UPDATE OR DELETE ON endpoint_secrets
    FOR EACH ROW EXECUTE FUNCTION hookrelay_config_changed();

-- +goose Down
DROP TRIGGER endpoint_secrets_config_changed ON endpoint_secrets;
DROP TRIGGER endpoints_config_changed ON endpoints;
DROP TRIGGER merchants_config_changed ON merchants;
DROP TRIGGER carriers_config_changed ON carriers;
DROP FUNCTION hookrelay_config_changed();
DROP TABLE config_version;
