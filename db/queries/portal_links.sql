-- name: PortalLinkInsert :one
INSERT INTO portal_links (token_sha256, merchant_id, read_only, credential_fp, created_at, expires_at)
SELECT @token_sha256, m.id, @read_only, substring(m.api_key_hash FROM 1 FOR 8), @now, @expires_at
FROM merchants m
WHERE m.id = @merchant_id
RETURNING id;

-- Redeems a link and opens its session in one statement: the link must be
-- unused, unexpired and made under the merchant's current key. A concurrent
-- redeem of the same link waits on the row and then finds it used.
-- name: PortalLinkRedeem :one
WITH link AS (
    UPDATE portal_links l SET used_at = @now::timestamptz
    FROM merchants m
    WHERE l.token_sha256 = @token_sha256
      AND l.used_at IS NULL
      AND l.expires_at > @now::timestamptz
      AND m.id = l.merchant_id
      AND l.credential_fp = substring(m.api_key_hash FROM 1 FOR 8)
    RETURNING l.merchant_id, l.read_only, l.credential_fp
)
INSERT INTO dashboard_sessions (token_sha256, kind, merchant_id, credential_fp, created_at, last_seen_at,
                                expires_at, user_agent, client_addr, read_only, portal)
SELECT @session_token_sha256, 'merchant', link.merchant_id, link.credential_fp, @now::timestamptz, @now::timestamptz,
       @session_expires_at::timestamptz, @user_agent, @client_addr, link.read_only, true
FROM link
RETURNING id, merchant_id, read_only;

-- name: PortalLinkDeleteExpired :execrows
DELETE FROM portal_links WHERE expires_at <= @before;
