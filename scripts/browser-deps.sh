#!/usr/bin/env bash
# Installs Debian's chromium for the dashboard browser tests (web/, chromedp)
# when /usr/bin/chromium is missing. Idempotent and quiet when it is present.
# Needs root (or sudo) and network access to the Debian mirror.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "browser-deps: /usr/bin/chromium is missing and we are not root; install Debian's chromium package" >&2
    exit 1
  fi
fi

echo "== installing chromium for the browser tests"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium >/dev/null
if [ ! -x /usr/bin/chromium ]; then
  echo "browser-deps: chromium installed but /usr/bin/chromium is missing" >&2
  exit 1
fi
