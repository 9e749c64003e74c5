#!/usr/bin/env bash
# `make test`: every test of the product module and of the bench module
# against a real PostgreSQL (see scripts/pg-url.sh), and of the deploy module
# (image, Helm chart, compose file, alert rules; no database); the fault
# suite of the e2e module is only vetted here (make test-faults runs it).
set -euo pipefail
cd "$(dirname "$0")/.."

url=$(scripts/pg-url.sh)
export HOOKRELAY_TEST_DATABASE_URL="$url"
echo "== PostgreSQL for tests: $url"

echo "== go vet"
go vet ./...
(cd bench && go vet ./...)
(cd e2e && go vet -tags faults ./...)
(cd deploy && go vet ./...)

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^tools/') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "not gofmt-ed:"; echo "$unformatted"; exit 1; fi

if [ -x scripts/browser-deps.sh ]; then
  echo "== browser for dashboard tests"
  scripts/browser-deps.sh
fi

echo "== tools for the walkthrough test"
scripts/walkthrough-deps.sh

echo "== go test -race"
go test -race -count=1 -timeout 30m ./...

echo "== go test -race (bench module)"
(cd bench && go test -race -count=1 -timeout 15m ./...)

# Without -race: these tests render templates and read files, nothing runs
# concurrently, and the race build of Helm and the Kubernetes types would
# double the module's compile time.
echo "== go test (deploy module)"
(cd deploy && go test -count=1 -timeout 15m ./...)

if [ -x scripts/fuzz-smoke.sh ]; then
  echo "== fuzz (short runs)"
  scripts/fuzz-smoke.sh
fi
