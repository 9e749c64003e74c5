-- +goose Up
-- An endpoint's signature scheme (Standard Webhooks): "hmac" signs v1 with a
-- shared secret, "ed25519" signs v1a with a private key. The keys live in
-- endpoint_secrets like HMAC secrets (sealed; a "whsk_" value is a private
-- key), so a rotation, even from one scheme to the other, keeps the old key
-- signing beside the new one for the overlap. public_key is the "whpk_"
-- public key of the newest ed25519 key ('' for hmac): public, stored in clear
-- so the API shows it without opening a secret.
ALTER TABLE endpoints
    ADD COLUMN signature  text NOT NULL DEFAULT 'hmac'
        CONSTRAINT endpoints_signature_check CHECK (signature IN ('hmac', 'ed25519')),
    ADD COLUMN public_key text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE endpoints DROP COLUMN signature, DROP COLUMN public_key;
