#!/usr/bin/env bash
# Prints the URL of a PostgreSQL server for tests and `make run`:
# $DATABASE_URL's server if it answers, else 127.0.0.1:5432, else a private
# throw-away cluster started here with initdb/pg_ctl as a non-root user.
set -euo pipefail

answers() { pg_isready -q -d "$1" -t 3 2>/dev/null; }

if [ -n "${DATABASE_URL:-}" ] && answers "$DATABASE_URL"; then
  echo "$DATABASE_URL"; exit 0
fi
default="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
if answers "$default"; then
  echo "$default"; exit 0
fi
# The machine's own cluster may just be stopped.
if command -v pg_ctlcluster >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  if [ -n "$ver" ]; then
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start >/dev/null 2>&1 || true
    for _ in $(seq 1 20); do answers "$default" && { echo "$default"; exit 0; }; sleep 0.5; done
  fi
fi

# A private cluster on port 55432 under /tmp, owned by a non-root user.
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bindir" ] || { echo "no PostgreSQL binaries found (apt-get install postgresql)" >&2; exit 1; }
dir=/tmp/hookrelay-pg
port=55432
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
if answers "$url"; then echo "$url"; exit 0; fi
as_user=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  as_user=(runuser -u postgres --)
fi
if [ ! -f "$dir/PG_VERSION" ]; then
  mkdir -p "$dir"; [ "$(id -u)" = 0 ] && chown postgres "$dir"
  "${as_user[@]}" "$bindir/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 >/dev/null
fi
"${as_user[@]}" "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
  -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on" start >/dev/null
echo "$url"
