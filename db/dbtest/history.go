package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// HistoryOpts says how much history DashboardHistory writes.
type HistoryOpts struct {
	CarrierID   int64   // carrier of the messages and dead letters
	EndpointIDs []int64 // endpoints the attempts and dead letters spread over; at least one
	Messages    int     // messages received today
	Attempts    int     // delivery attempts made today
	DeadLetters int
}

// DashboardHistory bulk-writes synthetic history into the database at url,
// one statement per table and then ANALYZE, so a benchmark can measure the
// dashboard's pages against a large database. Its ids (attempts' deliveries
// from 10,000,001, dead letters from 20,000,001) are far above what a test
// creates otherwise.
func DashboardHistory(t testing.TB, url string, o HistoryOpts) {
	t.Helper()
	if len(o.EndpointIDs) == 0 {
		t.Fatal("dbtest.DashboardHistory: no endpoints")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("dbtest.DashboardHistory: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	steps := []struct {
		name string
		sql  string
		args []any
	}{
		{"messages", historyMessagesSQL, []any{o.CarrierID, o.Messages}},
		{"attempts", historyAttemptsSQL, []any{o.EndpointIDs, o.Attempts}},
		{"dead letters", historyDeadLettersSQL, []any{o.CarrierID, o.DeadLetters, o.EndpointIDs}},
		{"analyze", "ANALYZE messages, delivery_attempts, dead_letters, deliveries", nil},
	}
	// A million rows take longer than a test server's statement_timeout may allow.
	if _, err := conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		t.Fatalf("dbtest.DashboardHistory: %v", err)
	}
	for _, s := range steps {
		if _, err := conn.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatalf("dbtest.DashboardHistory %s: %v", s.name, err)
		}
	}
}

// historyMessagesSQL writes $2 messages of carrier $1 received today, all in
// today's partition.
const historyMessagesSQL = `
INSERT INTO messages (id, received_at, carrier_id, event_type, ordering_key, queue, payload,
                      payload_size, payload_sha256)
SELECT nextval('messages_id_seq'),
       GREATEST(date_trunc('day', now()), now() - make_interval(secs => (g % 36000)::double precision)),
       $1::bigint, 'in_transit', 'BENCH' || (g % 10000), (g % 32)::smallint,
       convert_to('{"tracking_no":"BENCH' || (g % 10000) || '","status":"in_transit"}', 'UTF8'),
       60, '\x00'::bytea
FROM generate_series(1, $2::integer) AS g`

// historyAttemptsSQL writes $2 attempts made today, spread over the
// endpoints $1, one in ten failed.
const historyAttemptsSQL = `
INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt,
                               attempted_at, outcome, status_code, latency_ms, error, response_excerpt)
SELECT 10000000 + g, g, now(), ($1::bigint[])[1 + g % cardinality($1::bigint[])],
       1, GREATEST(date_trunc('day', now()), now() - make_interval(secs => (g % 36000)::double precision)),
       CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'success' END,
       CASE WHEN g % 10 = 0 THEN 500 ELSE 200 END, g % 200,
       CASE WHEN g % 10 = 0 THEN 'HTTP 500' ELSE '' END, 'ok'
FROM generate_series(1, $2::integer) AS g`

// historyDeadLettersSQL writes $2 dead letters of carrier $1 spread over the
// endpoints $3.
const historyDeadLettersSQL = `
INSERT INTO dead_letters (id, message_id, message_received_at, endpoint_id, merchant_id, carrier_id,
                          queue, ordering_key, event_type, attempts, last_status, last_error, created_at)
SELECT 20000000 + g, g, now(), e.id, e.merchant_id, $1::bigint, (g % 32)::smallint,
       'BENCH' || g, 'in_transit', 8, 500, 'HTTP 500', now() - make_interval(secs => g::double precision)
FROM generate_series(1, $2::integer) AS g
JOIN endpoints e ON e.id = ($3::bigint[])[1 + g % cardinality($3::bigint[])]`
