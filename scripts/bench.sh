#!/usr/bin/env bash
# `make bench`: builds bin/hookrelay and bin/hookrelay-bench (the bench
# module) and runs the load benchmark against a private PostgreSQL cluster (so its CPU and
# pg_stat_statements see only the benchmark): started here on port 55433
# under /tmp with pg_stat_statements preloaded, the WAL settings
# docs/operations/postgresql.md recommends (max_wal_size 4GB, checkpoint_timeout 15min),
# PostgreSQL defaults otherwise (plus the BENCH_PG_OPTS you give, which win).
# Arguments go to hookrelay-bench.
#   scripts/bench.sh --phases max --duration 30s
#   BENCH_PG_OPTS="-c synchronous_commit=off" scripts/bench.sh
#   scripts/bench.sh --start-pg       # start (and warm) the private cluster only
#   scripts/bench.sh --stop-pg        # stop the private cluster
set -euo pipefail
cd "$(dirname "$0")/.."

port=${BENCH_PG_PORT:-55433}
dir=${BENCH_PG_DIR:-/tmp/hookrelay-bench-pg}
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bindir" ] || { echo "no PostgreSQL binaries found" >&2; exit 1; }
as_user=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  as_user=(runuser -u postgres --)
fi

if [ "${1:-}" = "--stop-pg" ]; then
  "${as_user[@]}" "$bindir/pg_ctl" -D "$dir" -m fast stop
  exit 0
fi

fresh=0
if ! pg_isready -q -d "$url" -t 2; then
  if [ ! -f "$dir/PG_VERSION" ]; then
    mkdir -p "$dir"; [ "$(id -u)" = 0 ] && chown postgres "$dir"
    "${as_user[@]}" "$bindir/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 >/dev/null
    fresh=1
  fi
  # shellcheck disable=SC2086
  "${as_user[@]}" "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
    -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200 \
        -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all \
        -c track_io_timing=on -c max_wal_size=4GB -c checkpoint_timeout=15min \
        ${BENCH_PG_OPTS:-}" start >/dev/null
fi

# A new cluster has no WAL segments to recycle: each 16 MB of WAL then
# starts a new file, zero-filled and fsynced while every commit waits (55-90
# ms here, every 3.4 s at 2,000 callbacks/s). A cluster that has run for a
# while recycles the segments of its last checkpoint cycle instead, so
# before measuring, write 1 GB of WAL (logical messages: no table) and
# checkpoint; the 64 segments are then kept for reuse. BENCH_PG_WARM_WAL=0
# measures the cold cluster.
if [ "$fresh" = 1 ] && [ "${BENCH_PG_WARM_WAL:-1}" = 1 ]; then
  psql -qAt -d "$url" -c "SELECT count(pg_logical_emit_message(false, 'hookrelay-bench-warmup', repeat('x', 1048576))) FROM generate_series(1, 1000)" -c "CHECKPOINT" >/dev/null
fi

[ "${1:-}" = "--start-pg" ] && { echo "$url"; exit 0; }

go build -o bin/hookrelay ./cmd/hookrelay
(cd bench && go build -o ../bin/hookrelay-bench ./cmd/hookrelay-bench)
exec env DATABASE_URL="$url" bin/hookrelay-bench -hookrelay bin/hookrelay --pg-top "${BENCH_PG_TOP:-12}" "$@"
