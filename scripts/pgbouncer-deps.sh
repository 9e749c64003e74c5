#!/usr/bin/env bash
# Installs Debian's pgbouncer for the fault suite's PgBouncer scenario
# (e2e/faults, TestPgBouncer) when /usr/sbin/pgbouncer is missing.
# Idempotent and quiet when it is present. Needs root (or sudo) and network
# access to the Debian mirror. The package's own service is not used: the
# test starts a private pgbouncer with its own configuration and port.
set -euo pipefail

if [ -x /usr/sbin/pgbouncer ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "pgbouncer-deps: /usr/sbin/pgbouncer is missing and we are not root; install Debian's pgbouncer package" >&2
    exit 1
  fi
fi

echo "== installing pgbouncer for the fault suite"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# policy-rc.d-less containers would start the packaged service; it is not
# needed (and would take port 6432), so it is stopped again when it runs.
$sudo apt-get install -y -qq pgbouncer >/dev/null
if command -v service >/dev/null 2>&1; then
  $sudo service pgbouncer stop >/dev/null 2>&1 || true
fi
if [ ! -x /usr/sbin/pgbouncer ]; then
  echo "pgbouncer-deps: pgbouncer installed but /usr/sbin/pgbouncer is missing" >&2
  exit 1
fi
