package searchbench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookrelay/hookrelay"
)

// fillConfig writes the carriers (ids 1..Carriers) and the merchants (ids
// 1..Merchants) with two endpoints each (ids 2m-1 and 2m), as rowsSQL
// numbers them. Their keys are random and not kept: Measure gives the
// merchants keys of its own.
func fillConfig(ctx context.Context, pool *pgxpool.Pool, s Shape) error {
	for i := 1; i <= s.Carriers; i++ {
		key := hookrelay.NewKey(hookrelay.CarrierKeyPrefix)
		if _, err := pool.Exec(ctx, `INSERT INTO carriers (id, name, api_key_hash, api_key_prefix)
            OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4)`,
			i, fmt.Sprintf("carrier-%s", carrierPrefixes[i-1]), hookrelay.HashKey(key), hookrelay.KeyDisplayPrefix(key)); err != nil {
			return fmt.Errorf("carriers: %w", err)
		}
	}
	for m := 1; m <= s.Merchants; m++ {
		key := hookrelay.NewKey(hookrelay.MerchantKeyPrefix)
		if _, err := pool.Exec(ctx, `INSERT INTO merchants (id, name, api_key_hash, api_key_prefix)
            OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4)`,
			m, fmt.Sprintf("merchant-%d", m), hookrelay.HashKey(key), hookrelay.KeyDisplayPrefix(key)); err != nil {
			return fmt.Errorf("merchants: %w", err)
		}
		for e := 2*m - 1; e <= 2*m; e++ {
			if _, err := pool.Exec(ctx, `INSERT INTO endpoints (id, merchant_id, url)
                OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3)`,
				e, m, fmt.Sprintf("https://merchant-%d.example/hooks/%d", m, e)); err != nil {
				return fmt.Errorf("endpoints: %w", err)
			}
		}
	}
	// Objects created later (a test's) get ids past these.
	_, err := pool.Exec(ctx, `SELECT setval(pg_get_serial_sequence(t, 'id'), 100000)
        FROM (VALUES ('carriers'), ('merchants'), ('endpoints')) v(t)`)
	return err
}
