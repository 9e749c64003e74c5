-- +goose Up
-- What a receiver may need beyond a URL and a signing secret:
-- - headers: custom request headers, a JSON object of header name → value
--   sealed by the application (keyring package; names stay readable, values
--   never are);
-- - auth: the endpoint's credentials (basic or bearer), one sealed JSON
--   object, '' when none;
-- - filter: a content filter over the callback's JSON (ingest/filter), ''
--   when none; evaluated at ingest, so a change affects later callbacks.
-- Signing secrets (endpoint_secrets.secret, carriers.signing_secret,
-- ops_endpoints.secret) become sealed values too; the application seals the
-- rows still in plaintext when it starts (a migration has no key), and reads
-- a plaintext row as such until then.
ALTER TABLE endpoints
    ADD COLUMN headers jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
    ADD COLUMN auth    text  NOT NULL DEFAULT '',
    ADD COLUMN filter  text  NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE endpoints DROP COLUMN filter, DROP COLUMN auth, DROP COLUMN headers;
