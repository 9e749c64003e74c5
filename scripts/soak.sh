#!/usr/bin/env bash
# Soak of the hot queue table through the real binary: starts `hookrelay serve`
# (all roles, so the maintenance role's vacuum loop runs) on a database of its
# own, drives it with `hookrelay-bench --target ... --phases max` for
# SOAK_DURATION, and samples the deliveries table every SOAK_SAMPLE seconds:
# total size (heap + indexes + TOAST), live/dead tuples and pgstattuple's
# dead_tuple_percent (share of the table's bytes held by dead tuples), and
# pgstattuple's count of dead tuples against all (dead_count_pct: with a live
# set of a few hundred rows, a few dozen dead ones are 10 %).
# Pass criteria (docs/benchmarks.md, "Targets"): >= 5,000,000 callbacks, size < 64 MB, dead < 10 %.
#
#   SOAK_DURATION=1200s scripts/soak.sh
#   SOAK_RATE=2000 SOAK_DURATION=300s scripts/soak.sh   # a fixed rate instead of max
#   SOAK_OUT=/tmp/s SOAK_LOG_LEVEL=debug scripts/soak.sh # keep samples and the service log
#                                                       # (debug: one line per VACUUM)
#   SOAK_INIT_SQL="ALTER TABLE deliveries SET (fillfactor = 50)" scripts/soak.sh  # experiments
#   SOAK_ACTIVITY=1 SOAK_OUT=/tmp/s scripts/soak.sh  # also log, every 50 ms, each session of the
#       # soak's database in a transaction older than 120 ms (what holds back the VACUUMs)
#       # and each autovacuum worker, to activity.txt
#   SOAK_SERVER=$(scripts/bench.sh --start-pg) scripts/soak.sh  # on the bench's private
#       # cluster (PostgreSQL defaults: autovacuum on), not the machine's server (which
#       # CI configures with autovacuum off)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${SOAK_DURATION:-1200s}"
every="${SOAK_SAMPLE:-5}"
addr="${SOAK_ADDR:-127.0.0.1:18090}"
server=${SOAK_SERVER:-$(scripts/pg-url.sh)}
db="hookrelay_soak_$$"
url="${server%%/postgres\?*}/$db?sslmode=disable"
token="hra_soak_admin_token_$(date +%s)"
work=$(mktemp -d)
go build -o "$work/hookrelay" ./cmd/hookrelay
(cd bench && go build -o "$work/hookrelay-bench" ./cmd/hookrelay-bench)

cleanup() {
  [ -n "${svc:-}" ] && kill "$svc" 2>/dev/null && wait "$svc" 2>/dev/null || true
  [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null || true
  [ -n "${activity:-}" ] && kill "$activity" 2>/dev/null || true
  psql -q "$server" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

DATABASE_URL="$url" HOOKRELAY_ADDR="$addr" HOOKRELAY_ADMIN_TOKEN="$token" \
HOOKRELAY_ENCRYPTION_KEY="$("$work/hookrelay" encryption-key)" \
HOOKRELAY_DATA_DIR="$work/data" HOOKRELAY_S3_EMBED_ADDR=127.0.0.1:0 \
HOOKRELAY_ALLOW_PRIVATE_TARGETS=true HOOKRELAY_LOG_FORMAT=json HOOKRELAY_LOG_LEVEL="${SOAK_LOG_LEVEL:-warn}" \
  "$work/hookrelay" serve >"$work/serve.log" 2>&1 &
svc=$!
for _ in $(seq 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.2; done
psql -q "$url" -c "CREATE EXTENSION IF NOT EXISTS pgstattuple" >/dev/null
[ -n "${SOAK_INIT_SQL:-}" ] && psql -q "$url" -c "$SOAK_INIT_SQL" >/dev/null

(
  echo "t_s size_mb live dead dead_ratio dead_space_pct vacuums callbacks unix_s hot_update_pct dead_count_pct"
  start=$(date +%s)
  while sleep "$every"; do
    # One pgstattuple scan per sample gives both dead-tuple shares.
    row=$(psql -At -F' ' "$url" -c "SELECT round(pg_total_relation_size('deliveries')/1048576.0, 2),
      n_live_tup, n_dead_tup, round(n_dead_tup::numeric / greatest(n_live_tup + n_dead_tup, 1), 3),
      t.dead_tuple_percent,
      vacuum_count + autovacuum_count, coalesce(pg_sequence_last_value('deliveries_id_seq'), 0),
      round(extract(epoch FROM clock_timestamp()), 3),
      round(100.0 * n_tup_hot_upd / greatest(n_tup_upd, 1), 1),
      round(100.0 * t.dead_tuple_count / greatest(t.tuple_count + t.dead_tuple_count, 1), 1)
      FROM pg_stat_user_tables CROSS JOIN pgstattuple('deliveries') AS t
      WHERE relname = 'deliveries'" 2>/dev/null) || continue
    echo "$(( $(date +%s) - start )) $row"
  done
) >"$work/samples.txt" &
sampler=$!

if [ -n "${SOAK_ACTIVITY:-}" ]; then
  # psql prints nothing for an empty result, so the file holds only the holders.
  printf '%s\n\\watch 0.05\n' "SELECT to_char(clock_timestamp(), 'HH24:MI:SS.MS'), pid, backend_type,
      coalesce(wait_event_type || ':' || wait_event, ''),
      round(extract(epoch FROM clock_timestamp() - xact_start) * 1000), age(backend_xmin),
      left(regexp_replace(query, '\s+', ' ', 'g'), 100)
    FROM pg_stat_activity
    WHERE pid <> pg_backend_pid() AND (backend_type = 'autovacuum worker' OR
      (backend_xmin IS NOT NULL AND datname = current_database()
       AND clock_timestamp() - xact_start > interval '120 ms'))" |
    psql -qAt -F' | ' "$url" >"$work/activity.txt" 2>&1 &
  activity=$!
fi

phases=(--phases max)
[ -n "${SOAK_RATE:-}" ] && phases=(--phases rates --rates "$SOAK_RATE")
"$work/hookrelay-bench" --target "http://$addr" --admin-token "$token" "${phases[@]}" \
  --duration "$duration" --backlog 0 --database-url "$url"
sleep "$every"
kill "$sampler" 2>/dev/null || true
sampler=
[ -n "${activity:-}" ] && kill "$activity" 2>/dev/null || true
activity=

cat "$work/samples.txt"
if [ -n "${SOAK_OUT:-}" ]; then
  mkdir -p "$SOAK_OUT" && cp "$work/samples.txt" "$work/serve.log" "$SOAK_OUT/"
  [ -f "$work/activity.txt" ] && cp "$work/activity.txt" "$SOAK_OUT/"
fi
awk 'NR > 1 { if ($2 > s) s = $2; if ($6 > d) d = $6; if ($5 > r) r = $5; n = $8 }
     END { printf "soak: callbacks(deliveries)=%d max_size_mb=%.2f max_dead_space_pct=%.2f max_dead_ratio=%.3f\n", n, s, d, r }' "$work/samples.txt"
