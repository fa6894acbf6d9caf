#!/usr/bin/env bash
# Screenshots of the course site with headless Chromium: the home page and module 17's page (its
# top, its assignment, its failure catalogue), on a desktop window and on a phone-sized one.
#   site/screenshot.sh [OUT_DIR]        (default: build/screenshots)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../bin/kiln-env"
kiln_install_packages
kiln_build kiln-grader kiln-site site-shot
out=${1:-$KILN_HOME/build/screenshots}
mkdir -p "$out"
"$KILN_HOME/build/grader/kiln-grader" --root "$KILN_HOME" site build >/dev/null
site="file://$KILN_HOME/site/_site"
shot="$KILN_HOME/build/tests/site-shot"

"$shot" "$out/home.png" "$site/index.html" 1440 1000
"$shot" "$out/home-map.png" "$site/index.html" 1440 1000 "#module-map"
"$shot" "$out/module17.png" "$site/17_acceleration.html" 1440 1000
"$shot" "$out/module17-math.png" "$site/17_acceleration.html" 1440 1000 "#the-roofline-model"
"$shot" "$out/module17-write.png" "$site/17_acceleration.html" 1440 1000 "#what-you-write"
"$shot" "$out/module17-failures.png" "$site/17_acceleration.html" 1440 1000 "#when-it-fails"
"$shot" "$out/module17-phone.png" "$site/17_acceleration.html" 390 844
"$shot" "$out/home-phone.png" "$site/index.html" 390 844
