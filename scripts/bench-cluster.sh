#!/usr/bin/env bash
# `make bench-cluster`: the cost of the synchronous standby. Starts the
# private pair of scripts/pg-cluster.sh (fsync on), then runs the load
# benchmark's max-rate phase through the multi-host DATABASE_URL, alternating
# between a synchronous standby and an asynchronous one (the same two
# servers; synchronous_standby_names switched on the primary and reloaded),
# ROUNDS times each, so that both modes share the same minutes of a noisy
# machine. Prints each run's summary and the load average.
#   ROUNDS=2 DURATION=20s scripts/bench-cluster.sh [hookrelay-bench flags]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-2}
duration=${DURATION:-20s}
export PG_CLUSTER_SYNC=on
scripts/pg-cluster.sh start
url=$(scripts/pg-cluster.sh url)
primary=$(scripts/pg-cluster.sh primary-url | sed 's|/hookrelay?|/postgres?|')
go build -o bin/hookrelay ./cmd/hookrelay
(cd bench && go build -o ../bin/hookrelay-bench ./cmd/hookrelay-bench)

mode() { # mode sync|async
  local names="''"
  [ "$1" = sync ] && names="'FIRST 1 (hookrelay_standby)'"
  psql -qAt -d "$primary" -c "ALTER SYSTEM SET synchronous_standby_names = $names" -c "SELECT pg_reload_conf()" >/dev/null
  sleep 1
  psql -qAt -d "$primary" -c "SELECT 'standby: ' || application_name || ' ' || sync_state FROM pg_stat_replication"
}

for r in $(seq 1 "$rounds"); do
  for m in sync async; do
    mode "$m"
    echo "== round $r, $m standby, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    DATABASE_URL="$url" bin/hookrelay-bench -hookrelay bin/hookrelay --phases max --duration "$duration" \
      --backlog 0 --warmup 2s "$@" 2>&1 | grep -Ei 'max|callbacks/s|p50|p99|accepted' | head -20
  done
done
mode sync
echo "== done, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
