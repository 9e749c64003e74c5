#!/usr/bin/env bash
# A private two-node PostgreSQL cluster on this machine: a primary and a
# synchronous streaming standby made with pg_basebackup, each in its own data
# directory, run as the non-root postgres user (as scripts/pg-url.sh does).
# The fault suite's failover scenario drives it; `make cluster` runs it for a
# drill by hand (docs/operations/postgresql.md, "Running on a cluster").
#
#   scripts/pg-cluster.sh start          create (first time) and start both nodes
#   scripts/pg-cluster.sh stop           stop both nodes (fast)
#   scripts/pg-cluster.sh destroy        stop both and remove the data directories
#   scripts/pg-cluster.sh url            the multi-host DATABASE_URL (read-write node)
#   scripts/pg-cluster.sh replica-url    the standby's URL (HOOKRELAY_DATABASE_REPLICA_URL)
#   scripts/pg-cluster.sh status         role, replication state and lag of each node
#   scripts/pg-cluster.sh kill-primary   kill -9 every process of the primary (a lost machine)
#   scripts/pg-cluster.sh promote        promote the standby; it then runs alone (no sync standby)
#   scripts/pg-cluster.sh stop-standby   stop the standby: commits on the primary wait for it
#   scripts/pg-cluster.sh start-standby  start it again: the waiting commits complete
#
# Settings (environment): PG_CLUSTER_DIR (default /tmp/hookrelay-cluster),
# PG_CLUSTER_PRIMARY_PORT (55440), PG_CLUSTER_STANDBY_PORT (55441),
# PG_CLUSTER_DB (hookrelay, the database the URLs name), PG_CLUSTER_SYNC
# (on: synchronous_standby_names names the standby; off: asynchronous),
# PG_CLUSTER_FSYNC (on; off only for throw-away test clusters).
set -euo pipefail

dir=${PG_CLUSTER_DIR:-/tmp/hookrelay-cluster}
pport=${PG_CLUSTER_PRIMARY_PORT:-55440}
sport=${PG_CLUSTER_STANDBY_PORT:-55441}
dbname=${PG_CLUSTER_DB:-hookrelay}
sync=${PG_CLUSTER_SYNC:-on}
fsync=${PG_CLUSTER_FSYNC:-on}
primary=$dir-primary
standby=$dir-standby
sockdir=$dir-sock
# The standby's name in synchronous_standby_names (its application_name).
standby_name=hookrelay_standby

bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || { echo "pg-cluster: no PostgreSQL server binaries (apt-get install postgresql-15)" >&2; exit 1; }

as_user=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  as_user=(runuser -u postgres --)
fi
pg() { "${as_user[@]}" "$bindir/$1" "${@:2}"; }
own() { mkdir -p "$@"; if [ "$(id -u)" = 0 ]; then chown postgres "$@"; fi; chmod 700 "$@"; }

url_of() { echo "postgres://postgres@127.0.0.1:$1/$dbname?sslmode=disable"; }
answers() { pg pg_isready -q -h 127.0.0.1 -p "$1" -t 2 >/dev/null 2>&1; }

ctl() { # ctl DATADIR ARGS...
  pg pg_ctl -D "$1" -l "$1/server.log" -w -t 120 "${@:2}" >/dev/null
}

sql() { # sql PORT SQL
  pg psql -X -q -A -t -h 127.0.0.1 -p "$1" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$2"
}

init_primary() {
  own "$primary" "$sockdir"
  pg initdb -D "$primary" -U postgres --auth=trust -E UTF8 >/dev/null
  local names="''"
  [ "$sync" = on ] && names="'FIRST 1 ($standby_name)'"
  cat >>"$primary/postgresql.conf" <<EOF
# pg-cluster.sh
listen_addresses = '127.0.0.1'
port = $pport
unix_socket_directories = '$sockdir'
max_connections = 300
shared_buffers = 128MB
fsync = $fsync
wal_level = replica
max_wal_senders = 5
wal_keep_size = 512MB
hot_standby = on
hot_standby_feedback = on
synchronous_commit = on
synchronous_standby_names = $names
wal_sender_timeout = 10s
wal_receiver_status_interval = 1s
EOF
  echo "host replication postgres 127.0.0.1/32 trust" >>"$primary/pg_hba.conf"
}

init_standby() {
  own "$standby"
  pg pg_basebackup -h 127.0.0.1 -p "$pport" -U postgres -D "$standby" -X stream -R \
    --checkpoint=fast >/dev/null
  # pg_basebackup copied the primary's settings; the standby has its own
  # port, its name for synchronous_standby_names, and no standby of its own:
  # once promoted it commits alone (no synchronous standby to wait for).
  cat >>"$standby/postgresql.auto.conf" <<EOF
port = $sport
primary_conninfo = 'host=127.0.0.1 port=$pport user=postgres application_name=$standby_name'
synchronous_standby_names = ''
EOF
}

start_node() { # start_node DATADIR PORT
  answers "$2" || ctl "$1" start
}

cmd=${1:-}
case "$cmd" in
start)
  [ -f "$primary/PG_VERSION" ] || init_primary
  start_node "$primary" "$pport"
  [ -f "$standby/PG_VERSION" ] || init_standby
  start_node "$standby" "$sport"
  # After the standby: in sync mode a commit waits for it.
  sql "$pport" "SELECT 1 FROM pg_database WHERE datname = '$dbname'" | grep -q 1 ||
    sql "$pport" "CREATE DATABASE \"$dbname\"" >/dev/null
  # Up when the primary sees the standby streaming (and, in sync mode, as
  # its synchronous standby).
  want=streaming; [ "$sync" = on ] && want=sync
  for _ in $(seq 1 120); do
    st=$(sql "$pport" "SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = '$standby_name'" 2>/dev/null || true)
    case "$st" in "streaming $want"|"streaming sync") echo "pg-cluster: primary :$pport, standby :$sport ($st)"; exit 0;; esac
    sleep 0.5
  done
  echo "pg-cluster: the standby is not streaming after 60s (state: '${st:-none}'); see $standby/server.log" >&2
  exit 1
  ;;
stop)
  for d in "$standby" "$primary"; do
    [ -f "$d/postmaster.pid" ] && ctl "$d" stop -m fast || true
  done
  ;;
destroy)
  for d in "$standby" "$primary"; do
    [ -f "$d/postmaster.pid" ] && ctl "$d" stop -m immediate || true
  done
  rm -rf "$primary" "$standby" "$sockdir"
  ;;
url)
  echo "postgres://postgres@127.0.0.1:$pport,127.0.0.1:$sport/$dbname?sslmode=disable&target_session_attrs=read-write&connect_timeout=5"
  ;;
replica-url)
  url_of "$sport"
  ;;
primary-url)
  url_of "$pport"
  ;;
status)
  for p in "$pport" "$sport"; do
    if answers "$p"; then
      sql "$p" "SELECT ':$p ' || CASE WHEN pg_is_in_recovery() THEN 'standby, replay lag ' ||
        COALESCE(round(extract(epoch FROM now() - pg_last_xact_replay_timestamp())::numeric, 3)::text || ' s', 'unknown')
        ELSE 'primary, synchronous_standby_names=' || quote_literal(current_setting('synchronous_standby_names')) END"
    else
      echo ":$p down"
    fi
  done
  answers "$pport" && sql "$pport" "SELECT 'replication: ' || application_name || ' ' || state || ' ' || sync_state FROM pg_stat_replication" || true
  ;;
kill-primary)
  pidfile="$primary/postmaster.pid"
  [ -f "$pidfile" ] || { echo "pg-cluster: the primary is not running" >&2; exit 1; }
  pm=$(head -1 "$pidfile")
  # Every process of the node at once, as when its machine is lost: the
  # postmaster and its children (backends, walsender, checkpointer...).
  kids=$(ps -o pid= --ppid "$pm" | tr -d ' ' | tr '\n' ' ')
  # shellcheck disable=SC2086
  kill -9 "$pm" $kids 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pm" 2>/dev/null || break; sleep 0.1; done
  ;;
promote)
  ctl "$standby" promote
  ;;
stop-standby)
  ctl "$standby" stop -m fast
  ;;
start-standby)
  ctl "$standby" start
  ;;
*)
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
