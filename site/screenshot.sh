#!/usr/bin/env bash
# Screenshots of the course site with headless Chromium: the home page and module 17's page, on a
# desktop window and on a phone-sized one. Builds the site first.
#   site/screenshot.sh [OUT_DIR]        (default: build/screenshots)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$here/build/screenshots}
mkdir -p "$out"
"$here/bin/grader" site build >/dev/null
site="$here/site/_site"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

shoot() {  # shoot NAME PAGE WIDTH HEIGHT
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
    --force-device-scale-factor=1 --window-size="$3,$4" --virtual-time-budget=5000 \
    --screenshot="$out/$1.png" "file://$site/$2" >/dev/null 2>&1
  echo "$out/$1.png"
}

shoot home index.html 1440 1800
shoot module17 17_acceleration.html 1440 1800
shoot module17-failures "17_acceleration.html#when-it-fails" 1440 1400
shoot home-phone index.html 390 1400
shoot module17-phone 17_acceleration.html 390 1400
