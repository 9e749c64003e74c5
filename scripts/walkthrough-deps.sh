#!/usr/bin/env bash
# Installs what the README's walkthrough uses (curl, jq, python3) when one is
# missing, from Debian's packages: TestDocWalkthroughs runs the README's and
# docs/api.md's shell blocks as a reader would. Idempotent and quiet when all
# are present. Needs root (or sudo) and the Debian mirror.
set -euo pipefail

missing=()
for cmd in curl jq python3; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "walkthrough-deps: missing ${missing[*]} and not root; install them from Debian's packages" >&2
    exit 1
  fi
fi
echo "== installing ${missing[*]} for the walkthrough test"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
