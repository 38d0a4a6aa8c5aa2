#!/usr/bin/env bash
# Install Debian's Chromium for the browser test (tests/browser/), if it is not there yet.
# Idempotent: does nothing when /usr/bin/chromium runs; otherwise one `apt-get update` and one
# `apt-get install chromium` (needs root, as on CI). Playwright never downloads a browser of
# its own here: the test launches this binary through `executable_path`.
#   Usage: tools/install_browser.sh        (PAGEWEAVER_CHROMIUM=/path overrides the binary)
set -euo pipefail
CHROMIUM=${PAGEWEAVER_CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ] && "$CHROMIUM" --version >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "install_browser.sh: $CHROMIUM is missing and this user cannot apt-get install" \
         "Debian's 'chromium' package; the browser test will be skipped." >&2
    # On CI the browser test must run: a missing browser is an error there.
    case "${CI:-}" in 1|true|yes) exit 1 ;; *) exit 0 ;; esac
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium fonts-dejavu-core fonts-liberation >/dev/null
"$CHROMIUM" --version
