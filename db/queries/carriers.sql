-- name: CarrierInsert :one
INSERT INTO carriers (name, api_key_hash, api_key_prefix, ordering_key_field, event_type_field,
                      merchant_field, signing_secret, rate_limit_per_sec)
VALUES (@name, @api_key_hash, @api_key_prefix, @ordering_key_field, @event_type_field,
        @merchant_field, sqlc.narg(signing_secret), @rate_limit_per_sec)
RETURNING *;

-- name: CarrierGet :one
SELECT * FROM carriers WHERE id = $1;

-- name: CarrierGetByKeyHash :one
SELECT * FROM carriers WHERE api_key_hash = $1;

-- name: CarrierList :many
SELECT * FROM carriers WHERE id > @after_id ORDER BY id LIMIT @lim;

-- name: CarrierListAll :many
SELECT * FROM carriers ORDER BY id;

-- name: CarrierCount :one
SELECT count(*) FROM carriers;
