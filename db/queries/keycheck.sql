-- name: SealedKeyIDs :many
-- Every key id the stored sealed values name (values start with @prefix,
-- "hrk1:"), per column that holds them, with how many values and one of
-- them (the key check tries the key on it): expired secrets and deleted
-- endpoints included, since a re-seal pass rewrites them too. The sealed
-- settings are those named in @settings.
SELECT v.source::text AS source, v.key_id::text AS key_id, count(*)::bigint AS n, min(v.value)::text AS sample
FROM (
    SELECT 'endpoint_secrets.secret' AS source, split_part(s.secret, ':', 2) AS key_id, s.secret AS value
    FROM endpoint_secrets s WHERE starts_with(s.secret, @prefix::text)
    UNION ALL
    SELECT 'endpoints.headers', split_part(h.value, ':', 2), h.value
    FROM endpoints e CROSS JOIN LATERAL jsonb_each_text(e.headers) h WHERE starts_with(h.value, @prefix::text)
    UNION ALL
    SELECT 'endpoints.auth', split_part(e.auth, ':', 2), e.auth
    FROM endpoints e WHERE starts_with(e.auth, @prefix::text)
    UNION ALL
    SELECT 'carriers.signing_secret', split_part(c.signing_secret, ':', 2), c.signing_secret
    FROM carriers c WHERE starts_with(c.signing_secret, @prefix::text)
    UNION ALL
    SELECT 'ops_endpoints.secret', split_part(o.secret, ':', 2), o.secret
    FROM ops_endpoints o WHERE starts_with(o.secret, @prefix::text)
    UNION ALL
    SELECT 'users.totp_secret', split_part(u.totp_secret, ':', 2), u.totp_secret
    FROM users u WHERE starts_with(u.totp_secret, @prefix::text)
    UNION ALL
    SELECT 'settings.' || st.name, split_part(st.value, ':', 2), st.value
    FROM settings st WHERE st.name = ANY(sqlc.arg(settings)::text[]) AND starts_with(st.value, @prefix::text)
) v
GROUP BY v.source, v.key_id
ORDER BY v.key_id, v.source;
