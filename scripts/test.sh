#!/usr/bin/env bash
# `make test`: every test against a real PostgreSQL (see scripts/pg-url.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

url=$(scripts/pg-url.sh)
export HOOKRELAY_TEST_DATABASE_URL="$url"
echo "== PostgreSQL for tests: $url"

echo "== go vet"
go vet ./...

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^tools/') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "not gofmt-ed:"; echo "$unformatted"; exit 1; fi

if [ -x scripts/browser-deps.sh ]; then
  echo "== browser for dashboard tests"
  scripts/browser-deps.sh
fi

echo "== go test -race"
go test -race -count=1 -timeout 30m ./...

if [ -x scripts/fuzz-smoke.sh ]; then
  echo "== fuzz (short runs)"
  scripts/fuzz-smoke.sh
fi
