#!/usr/bin/env bash
# Short fuzz run of every Fuzz target of the product module (CI); the
# committed corpus under <pkg>/testdata/fuzz is replayed by plain `go test` as
# well.
# FUZZTIME overrides the per-target budget (default 20000x: 20,000 inputs).
# The default is a count, not a duration: with a duration, Go 1.26's fuzz
# coordinator sometimes fails a target with a bare "context deadline exceeded"
# at the deadline, having found nothing (go.dev/issue/75804, fixed in Go
# 1.27; CI failed on FuzzCallbackParse that way). A count has no deadline.
# 20,000 inputs take 3-6 s for three targets here, ~20 s for
# FuzzLoadConfig (~1,000 inputs/s) and ~10 s for FuzzCallbackRequest, which
# sends whole requests to a real server and so needs PostgreSQL
# (HOOKRELAY_TEST_DATABASE_URL), as the tests do.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-20000x}"
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(' . | grep -vE '^./(tools|bench|e2e)/' | while read -r f; do
  pkg="./$(dirname "${f#./}")"
  grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$f" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | while read -r target; do
    echo "-- $pkg $target ($fuzztime)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime=3s "$pkg"
  done
done
