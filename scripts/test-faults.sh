#!/usr/bin/env bash
# `make test-faults`: the fault suite (build tag `faults`). It starts its own
# private PostgreSQL cluster for the restart scenario and uses the server of
# scripts/pg-url.sh for the others.
set -euo pipefail
cd "$(dirname "$0")/.."
url=$(scripts/pg-url.sh)
export HOOKRELAY_TEST_DATABASE_URL="$url"
go test -tags faults -count=1 -timeout 15m ./cmd/hookrelay/internal/faults/
