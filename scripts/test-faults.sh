#!/usr/bin/env bash
# `make test-faults`: the fault suite (module e2e, build tag `faults`). It
# builds its own hookrelay binary, starts its own private PostgreSQL cluster
# for the restart scenario and uses the server of scripts/pg-url.sh for the
# others. The PgBouncer scenario needs Debian's pgbouncer, installed here
# when missing. Arguments go to go test: scripts/test-faults.sh -run TestKillDuringReplay
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/pgbouncer-deps.sh
url=$(scripts/pg-url.sh)
export HOOKRELAY_TEST_DATABASE_URL="$url"
cd e2e
go test -tags faults -count=1 -timeout "${FAULTS_TIMEOUT:-15m}" ./... "$@"
