#!/usr/bin/env bash
# `make bench-search`: message search on a large history (docs/benchmarks.md,
# "Search at 50 million messages"). Starts a private PostgreSQL cluster
# (scripts/bench.sh's, on port 55434 under /tmp/hookrelay-searchbench-pg, so
# the 40 GB it fills never land in the shared server), builds bin/hookrelay
# and bin/hookrelay-searchbench, and runs it: fill (about 40 GB and an hour
# on 2 cores for the default 50 million messages), then measure; the plans
# and results go to $SEARCHBENCH_OUT (default /tmp/hookrelay-searchbench-out).
# Arguments go to hookrelay-searchbench (the command last).
#   scripts/bench-search.sh                          # fill and measure
#   scripts/bench-search.sh measure                  # measure the last fill again
#   scripts/bench-search.sh -messages 1000000 all    # a smaller history
#   scripts/bench-search.sh --drop                   # stop the cluster, delete its data
set -euo pipefail
cd "$(dirname "$0")/.."

export BENCH_PG_PORT=${BENCH_PG_PORT:-55434}
export BENCH_PG_DIR=${BENCH_PG_DIR:-/tmp/hookrelay-searchbench-pg}
export BENCH_PG_WARM_WAL=0
# wal_level=minimal: a day partition filled in the transaction that created
# it writes no WAL (the fill's own speed; searches do not write).
export BENCH_PG_OPTS="-c shared_buffers=2GB -c wal_level=minimal -c max_wal_senders=0 ${BENCH_PG_OPTS:-}"

if [ "${1:-}" = "--drop" ]; then
  scripts/bench.sh --stop-pg || true
  rm -rf "$BENCH_PG_DIR"
  exit 0
fi
url=$(scripts/bench.sh --start-pg)
go build -o bin/hookrelay ./cmd/hookrelay
(cd bench && go build -o ../bin/hookrelay-searchbench ./cmd/hookrelay-searchbench)
out=${SEARCHBENCH_OUT:-/tmp/hookrelay-searchbench-out}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(all)
exec env DATABASE_URL="$url" bin/hookrelay-searchbench -hookrelay bin/hookrelay -out "$out" \
  -pg-log "$BENCH_PG_DIR/server.log" "${args[@]}"
