#!/usr/bin/env bash
# The claim statement's cost on a fixed backlog, without the service: pgbench
# runs DeliveryClaim (as sqlc generated it, prepared, in a transaction rolled
# back so every run sees the same rows) and its candidate step alone (the
# walk and shares of the fair claim, docs/dispatch.md "Fair claim"), and
# EXPLAIN (ANALYZE, BUFFERS) gives the buffers of one run.
#
# The backlog: for each of ENDPOINTS (one figure per value), 32 queues ×
# that many endpoints, ROWS due rows each behind LEASED rows in flight
# (leased, at the front), each row its own ordering key. The claim is the one
# a dispatcher holding all 32 queues runs: per_queue 7, batch 50, queues of
# fewer than PEEK rows (32, the service's bound) read whole, larger ones
# walked (PEEK=0: every queue walked), with the planner settings of the
# claim's sessions (db.go, claimSession).
#
#   scripts/claim-cost.sh                       # ENDPOINTS="1 10" ROWS=200 LEASED=4: walked
#   ROWS=1 LEASED=2 scripts/claim-cost.sh       # a queue at full load: read whole
#   ENDPOINTS="1 10 100" TXNS=5000 scripts/claim-cost.sh
#
# Uses DATABASE_URL's server (default: the machine's PostgreSQL) and a
# scratch database hookrelay_claimcost, dropped and created afresh. Quiet
# machines only: the figures are per statement, a few tenths of a ms.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
db=hookrelay_claimcost
url=$(printf '%s' "$base" | sed -E "s#/[^/?]*(\?|$)#/$db\1#")
endpoints=${ENDPOINTS:-1 10}
rows=${ROWS:-200}
leased=${LEASED:-4}
txns=${TXNS:-3000}
peek=${PEEK:-32}
# The claim sessions' settings, read from db.go (claimSession's SETs) so that
# they cannot drift apart, as PGOPTIONS "-c name=value" pairs.
claim_opts=$(sed -n '/^var claimSession = /,/^}/s/^[[:space:]]*set: *"\(.*\)",$/\1/p' db/db.go |
  tr ';' '\n' | sed -E 's/^ *SET ([a-z_]+) = (.*)$/-c \1=\2/' | paste -sd' ')
case "$claim_opts" in *plan_cache_mode*) ;; *) echo "claimSession's settings not found in db/db.go" >&2; exit 1 ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v pgbench >/dev/null || { echo "pgbench not found (Debian: postgresql-client)" >&2; exit 1; }
psql -qAt -d "$base" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
go build -o "$work/hookrelay" ./cmd/hookrelay
HOOKRELAY_ENCRYPTION_KEY=$("$work/hookrelay" encryption-key) DATABASE_URL="$url" "$work/hookrelay" migrate >/dev/null 2>&1

# The statement, its parameters as pgbench variables ($1 queues, $2 cursors,
# $3 endpoints skipped (none), $4 the small-queue bound, $5 per_queue,
# $6 batch, $7 lease, $8 owner, $9 token).
awk '/^const deliveryClaim = `/{on=1; next} on && /^`$/{exit} on' db/internal/dbsqlc/deliveries.sql.go |
  sed -e 's/\$1\b/:qs/g' -e 's/\$2\b/:afters/g' -e "s/\\\$3\\b/'{}'/g" -e 's/\$4\b/:peek/g' \
      -e 's/\$5\b/:pq/g' -e 's/\$6\b/:batch/g' -e "s/\\\$7\\b/'5 minutes'/g" -e 's/\$8\b/1/g' \
      -e 's/\$9\b/:tok/g' >"$work/claim.sql"
grep -q 'deliveries_claim_walk' "$work/claim.sql" || { echo "DeliveryClaim not found in the generated code" >&2; exit 1; }
{ echo '\set tok random(1, 1000000000)'; echo 'BEGIN;'; sed '$ s/;*$/;/' "$work/claim.sql"; echo 'ROLLBACK;'; } >"$work/whole.bench"
{ echo 'BEGIN;'; sed -n '/^WITH cand AS MATERIALIZED/,/^),$/p' "$work/claim.sql" | sed '$ s/),$/)/'
  echo 'SELECT count(*) FROM cand;'; echo 'ROLLBACK;'; } >"$work/cand.bench"

qs="{$(seq -s, 0 31)}"
for e in $endpoints; do
  psql -qAt -d "$url" -v ON_ERROR_STOP=1 -v E="$e" -v R="$rows" -v L="$leased" >/dev/null <<'SQL'
TRUNCATE deliveries;
DELETE FROM endpoints;
DELETE FROM merchants;
INSERT INTO merchants (name, api_key_hash, api_key_prefix) VALUES ('claim-cost', '\x01', 'cc');
INSERT INTO endpoints (merchant_id, url)
  SELECT (SELECT min(id) FROM merchants), 'http://127.0.0.1:1/' || g FROM generate_series(1, :E) g;
INSERT INTO messages (id, received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
  SELECT g, date_trunc('hour', now()), 1, 'k' || g, g % 32, '{"a":1}'::bytea, 7, '\x00'::bytea
  FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING;
INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at, visible_at, leased_until, lease_token)
  SELECT q, e.id, 'key-' || q || '-' || e.id || '-' || n, 1 + n % 1000, date_trunc('hour', now()),
         now() - interval '10 seconds' + n * interval '1 ms',
         CASE WHEN n <= :L THEN now() + interval '1 hour' END, CASE WHEN n <= :L THEN 1 END
  FROM generate_series(0, 31) q, endpoints e, generate_series(1, :R + :L) n;
VACUUM ANALYZE deliveries;
SQL
  # Each queue's cursor in the middle of its endpoints, as a claim loop's is.
  after=$(psql -qAt -d "$url" -c "SELECT min(id) + (max(id) - min(id)) / 2 FROM endpoints")
  afters="{$(printf "$after%.0s," $(seq 1 32) | sed 's/,$//')}"
  run() {
    PGOPTIONS="$claim_opts" pgbench -n -M prepared -t "$txns" -D qs="$qs" -D afters="$afters" -D pq=7 -D batch=50 -D peek="$peek" -f "$1" "$url" 2>&1 |
      awk '/latency average/ {print $4}'
  }
  explain=$(sed -e "s/:qs/'$qs'/" -e "s/:afters/'$afters'/" -e 's/:pq/7/g' -e 's/:batch/50/g' -e "s/:peek/$peek/g" -e 's/:tok/42/g' "$work/claim.sql")
  buffers=$(PGOPTIONS="$claim_opts" psql -qAt -d "$url" -c "BEGIN" -c "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) $explain" -c "ROLLBACK" |
    awk 'function hits(l) { sub(/.*shared hit=/, "", l); sub(/[^0-9].*/, "", l); return l }
         /Buffers: shared/ && !top { top = hits($0) }
         /CTE cand/ { incand = 1 }
         incand && /Buffers: shared/ { cand = hits($0); incand = 0 }
         END { print top, cand }')
  # Alternate the two, three times each: the machine drifts.
  w1=$(run "$work/whole.bench"); c1=$(run "$work/cand.bench")
  w2=$(run "$work/whole.bench"); c2=$(run "$work/cand.bench")
  w3=$(run "$work/whole.bench"); c3=$(run "$work/cand.bench")
  printf 'endpoints per queue %s: claim %s / %s / %s ms, candidate step %s / %s / %s ms (pgbench, prepared, with BEGIN and ROLLBACK); buffers: claim %s, candidate step %s\n' \
    "$e" "$w1" "$w2" "$w3" "$c1" "$c2" "$c3" ${buffers}
done
psql -qAt -d "$base" -c "DROP DATABASE $db" >/dev/null
