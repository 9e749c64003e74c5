#!/usr/bin/env bash
# `make run`: database from the machine, the embedded S3 store, all roles.
set -euo pipefail
cd "$(dirname "$0")/.."
server=$(scripts/pg-url.sh)
if [ -z "${DATABASE_URL:-}" ]; then
  # Same server, our own database (created by `serve` when missing).
  export DATABASE_URL="${server%%/postgres\?*}/hookrelay?sslmode=disable"
fi
mkdir -p data
kept="set in HOOKRELAY_ADMIN_TOKEN"
if [ -z "${HOOKRELAY_ADMIN_TOKEN:-}" ]; then
  [ -s data/admin-token ] || { umask 077; ./bin/hookrelay token > data/admin-token; }
  HOOKRELAY_ADMIN_TOKEN=$(cat data/admin-token)
  export HOOKRELAY_ADMIN_TOKEN
  kept="kept in data/admin-token"
fi
if [ -z "${HOOKRELAY_ENCRYPTION_KEY:-}" ]; then
  # Seals the secrets kept in the database: losing it loses them, so it is
  # kept beside the admin token (back data/ up, or set the variable).
  [ -s data/encryption-key ] || { umask 077; ./bin/hookrelay encryption-key > data/encryption-key; }
  HOOKRELAY_ENCRYPTION_KEY=$(cat data/encryption-key)
  export HOOKRELAY_ENCRYPTION_KEY
fi
addr="${HOOKRELAY_ADDR:-127.0.0.1:8080}"
# The token is printed here, once, on stdout before the service starts:
# never inside the log records that follow (on stderr).
cat <<EOF

hookrelay is starting; its logs follow. In another shell, paste:

  export HOOKRELAY_URL=http://$addr ADMIN_TOKEN=$HOOKRELAY_ADMIN_TOKEN

Dashboard: http://$addr/ui/ (log in with the admin token, $kept)
EOF
if [ "${HOOKRELAY_ALLOW_PRIVATE_TARGETS:-false}" != "true" ]; then
  echo "Endpoints on this machine (127.0.0.1, localhost) are refused: for a local receiver, start with"
  echo "HOOKRELAY_ALLOW_PRIVATE_TARGETS=true make run (tests and demos only)."
fi
echo
exec ./bin/hookrelay serve "$@"
