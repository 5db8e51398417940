#!/usr/bin/env bash
# Install Debian's Chromium for the browser test (tests/browser), which drives it with Playwright through
# `executable_path=/usr/bin/chromium`. Playwright's own browser downloads (`playwright install`) are never used.
# Needs root and apt-get; otherwise it says why not and exits 1 (the browser test then skips with that reason).
set -euo pipefail

CHROMIUM="${EVT_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  echo "chromium present: $CHROMIUM"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium not installed and apt-get is not available: install Chromium so that $CHROMIUM exists" >&2
  exit 1
fi
if [ "$(id -u)" != "0" ]; then
  echo "chromium not installed and not running as root: run 'sudo apt-get install -y chromium' to enable the browser test" >&2
  exit 1
fi
echo "installing Debian chromium (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
echo "chromium installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
