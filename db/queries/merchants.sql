-- name: MerchantInsert :one
INSERT INTO merchants (name, api_key_hash, api_key_prefix)
VALUES (@name, @api_key_hash, @api_key_prefix)
RETURNING *;

-- name: MerchantGet :one
SELECT * FROM merchants WHERE id = $1;

-- name: MerchantGetByKeyHash :one
SELECT * FROM merchants WHERE api_key_hash = $1;

-- name: MerchantList :many
SELECT * FROM merchants WHERE id > @after_id ORDER BY id LIMIT @lim;

-- name: MerchantCount :one
SELECT count(*) FROM merchants;

-- name: MerchantKeyUpdate :one
UPDATE merchants SET api_key_hash = @api_key_hash, api_key_prefix = @api_key_prefix
WHERE id = @id
RETURNING *;
