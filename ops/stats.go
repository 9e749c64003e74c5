package ops

import (
	"context"

	"github.com/hookrelay/hookrelay/db"
)

// Stats returns the platform's counts (GET /v1/stats). Operators only.
func (s *Service) Stats(ctx context.Context) (db.APIStats, error) {
	return s.db.APIStatsGet(ctx)
}
