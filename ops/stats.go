package ops

import (
	"context"

	"github.com/hookrelay/hookrelay/db"
)

// Stats returns the platform's counts (GET /v1/stats). Operators only.
func (s *Service) Stats(ctx context.Context) (db.Stats, error) {
	return s.db.StatsGet(ctx)
}
