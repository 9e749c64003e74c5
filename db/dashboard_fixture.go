package db

import (
	"context"
	"fmt"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// DashboardFixtureSize says how much history DashboardFixture writes.
type DashboardFixtureSize struct {
	CarrierID   int64   // carrier of the messages and dead letters
	EndpointIDs []int64 // endpoints the attempts and dead letters spread over
	Messages    int     // messages received today
	Attempts    int     // delivery attempts made today
	DeadLetters int
}

// DashboardFixture bulk-writes synthetic history (in one statement per table,
// then ANALYZE) so benchmarks can measure the dashboard's pages against a
// large database. Not for production data.
func (db *DB) DashboardFixture(ctx context.Context, s DashboardFixtureSize) error {
	if len(s.EndpointIDs) == 0 {
		return fmt.Errorf("dashboard fixture: no endpoints")
	}
	if _, err := db.q.DashboardFixtureMessages(ctx, dbsqlc.DashboardFixtureMessagesParams{CarrierID: s.CarrierID, N: int32(s.Messages)}); err != nil {
		return fmt.Errorf("fixture messages: %w", unavailable(err))
	}
	if _, err := db.q.DashboardFixtureAttempts(ctx, dbsqlc.DashboardFixtureAttemptsParams{EndpointIds: s.EndpointIDs, N: int32(s.Attempts)}); err != nil {
		return fmt.Errorf("fixture attempts: %w", unavailable(err))
	}
	if _, err := db.q.DashboardFixtureDeadLetters(ctx, dbsqlc.DashboardFixtureDeadLettersParams{
		CarrierID: s.CarrierID, N: int32(s.DeadLetters), EndpointIds: s.EndpointIDs}); err != nil {
		return fmt.Errorf("fixture dead letters: %w", unavailable(err))
	}
	if err := db.q.DashboardFixtureAnalyze(ctx); err != nil {
		return fmt.Errorf("fixture analyze: %w", unavailable(err))
	}
	return nil
}
