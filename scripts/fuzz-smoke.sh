#!/usr/bin/env bash
# Short fuzz run of every Fuzz target (CI); the committed corpus under
# <pkg>/testdata/fuzz is replayed by plain `go test` as well.
# FUZZTIME overrides the per-target budget (default 8s).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-8s}"
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(' . | grep -v '^./tools/' | while read -r f; do
  pkg="./$(dirname "${f#./}")"
  grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$f" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | while read -r target; do
    echo "-- $pkg $target ($fuzztime)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime=3s "$pkg"
  done
done
