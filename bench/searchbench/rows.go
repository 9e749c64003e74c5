package searchbench

import (
	"fmt"
	"strings"
)

// rowsSQL is a SELECT of the messages n in [$2, $3] (0-based; message id
// n+1) received from $1 (the window's start), with every column a message
// and its delivery need. Everything is a function of n, so the messages
// and their attempts are written by separate statements, in parallel,
// without reading each other. Shape's Go methods compute the same keys.
func (s Shape) rowsSQL() string { return s.rowsOver("generate_series($2::bigint, $3::bigint)") }

// rowsOver is rowsSQL over the message numbers of series (a set-returning
// SQL expression).
func (s Shape) rowsOver(series string) string {
	p := s.PerKey
	quoted := make([]string, len(eventTypes))
	for i, e := range eventTypes {
		quoted[i] = "'" + e + "'"
	}
	prefixes := make([]string, s.Carriers)
	for i := range prefixes {
		prefixes[i] = "'" + carrierPrefixes[i] + "'"
	}
	return fmt.Sprintf(`
SELECT b.n, b.id, b.received_at, b.j, b.k, b.h,
       (b.k %% %[4]d + 1)::bigint AS carrier_id,
       (ARRAY[%[5]s])[b.k %% %[4]d + 1] || lpad(b.h::text, 10, '0') AS ordering_key,
       (ARRAY[%[6]s])[b.j + 1] AS event_type,
       b.merchant_id,
       (b.merchant_id - 1) * 2 + (b.k / %[4]d) %% 2 + 1 AS endpoint_id,
       (b.h %% 32)::smallint AS queue,
       b.received_at + make_interval(secs => 0.05 + (b.h %% 400) / 1000.0) AS attempted_at,
       b.id %% %[7]d = 0 AS dead,
       b.n >= %[8]d AS pending
FROM (SELECT a.*, (a.k * %[9]d) %% 4294967296 AS h,
             1 + floor((%[10]d * ((a.k * %[9]d) %% 4294967296)::float8 / 4294967296)
                       * (((a.k * %[9]d) %% 4294967296)::float8 / 4294967296))::bigint AS merchant_id
      FROM (SELECT g.n, g.n + 1 AS id,
                   $1::timestamptz + make_interval(secs => g.n * %[1]v::float8) AS received_at,
                   (g.n %% %[2]d)::int AS j,
                   g.n / %[2]d - (g.n %% %[2]d) * %[3]d + %[11]d AS k
            FROM %[12]s AS g(n)) a) b`,
		s.stepSeconds(), p, s.keyLag(), s.Carriers,
		strings.Join(prefixes, ","), strings.Join(quoted[:min(p, len(quoted))], ","),
		s.DeadEvery, s.Messages-s.Pending, hashMul, s.Merchants, keyOffset, series)
}

// payloadSQL is the payload of row r (JSON as a carrier sends it, padded
// to about PayloadBytes) (a rowsSQL row) as bytea.
func (s Shape) payloadSQL(r string) string {
	// The JSON without its padding is about jsonLen bytes.
	const jsonLen = 205
	pad := max(s.PayloadBytes-jsonLen, 0)
	return fmt.Sprintf(`convert_to(format('{"tracking_no":"%%s","status":"%%s","merchant_id":"m%%s","carrier_id":%%s,`+
		`"event_time":"%%s","location":{"city":"C%%s","postal_code":"%%s","country":"DE"},"note":"%%s"}', `+
		`%[1]s.ordering_key, %[1]s.event_type, %[1]s.merchant_id, %[1]s.carrier_id, %[1]s.received_at, `+
		`%[1]s.h %% 1000, lpad((%[1]s.h %% 100000)::text, 5, '0'), repeat('x', %[2]d)), 'UTF8')`, r, pad)
}
