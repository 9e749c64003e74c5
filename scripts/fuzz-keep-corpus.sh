#!/usr/bin/env bash
# Copies the inputs a local fuzz run found interesting (kept in GOCACHE) into
# <pkg>/testdata/fuzz/<Target>/ so they are committed and replayed by every
# `go test`. Usage: scripts/fuzz-keep-corpus.sh [max-per-target]
set -euo pipefail
cd "$(dirname "$0")/.."
max="${1:-40}"
cache="$(go env GOCACHE)/fuzz/$(go list -m)"
[ -d "$cache" ] || { echo "no fuzz cache at $cache"; exit 0; }
find "$cache" -mindepth 1 -type d -name 'Fuzz*' | while read -r dir; do
  rel="${dir#"$cache"/}"
  pkg="$(dirname "$rel")"; target="$(basename "$rel")"
  dest="$pkg/testdata/fuzz/$target"
  [ -d "$pkg" ] || continue
  mkdir -p "$dest"
  ls -S "$dir" | tail -n "$max" | while read -r f; do cp -n "$dir/$f" "$dest/$f"; done
  echo "$dest: $(ls "$dest" | wc -l) inputs"
done
