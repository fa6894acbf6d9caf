#!/usr/bin/env bash
# Measures how long `bin/grader check N` takes, through the launcher, on a fresh clone:
#   cold    the first run (builds the grader and the module; packages already installed)
#   no-op   the same command again with nothing changed
#   edit    after changing one line of a student file
# Usage: tests/bench/check_speed.sh [MODULE] [--solution]   (default module 01)
# Prints one line per measurement; a benchmark, not a test: it asserts nothing.
set -euo pipefail
module=${1:-01}
shift || true
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$here" "$work/kiln"
cd "$work/kiln"

seconds() { local start end; start=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; end=$(date +%s.%N); awk "BEGIN { print $end - $start }"; }

cold=$(seconds bin/grader check "$module" "$@")
noop=$(seconds bin/grader check "$module" "$@")
# The first student file of the module: change one line (a comment, so the result stays the same).
dir=$(ls -d modules/"$module"*/ 2>/dev/null | head -n 1)
[[ -n $dir ]] || dir=$(ls -d modules/*/ | sed -n "$((10#$module))p")
file=$(awk '/^student_files:/{f=1;next} f&&/^ *- /{print $2; exit}' "$dir/module.yaml")
sed -i '1s|^|// edited\n|' "$dir/$file"
edit=$(seconds bin/grader check "$module" "$@")
noop2=$(seconds bin/grader check "$module" "$@")
printf 'module %s: cold %.1f s, no-op %.2f s, one-line edit %.2f s, no-op again %.2f s (%s)\n' \
  "$module" "$cold" "$noop" "$edit" "$noop2" "$(nproc) cores"
