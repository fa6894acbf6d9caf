#!/usr/bin/env bash
# Batch-grades N submissions of a module (default 50 of module 17) through the sandbox and reports
# submissions per minute. The submissions are the reference solution and the stubs, alternating
# (KIND=mixed), or the reference only (KIND=reference), each made distinct by a comment so that
# every one is compiled. A benchmark: it asserts nothing. The first grade (one submission, untimed)
# builds the judge and the reference libraries.
# Usage: tests/bench/grade_throughput.sh [N] [MODULE] [JOBS] [KIND]
set -euo pipefail
count=${1:-50}
module=${2:-17}
jobs=${3:-$(nproc)}
kind=${4:-mixed}
grader=${KILN_GRADER_BIN:-}  # a grader binary to use instead of bin/grader (it then needs KILN_HOME)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dir=$(ls -d "$here"/modules/"$module"_*/)
name=$(basename "$dir")
mapfile -t files < <(awk '/^student_files:/{f=1;next} f&&/^ *- /{print $2} f&&/^[a-z]/{exit}' "$dir/module.yaml")
for i in $(seq 1 "$count"); do
  sub="$work/submissions/student$(printf %03d "$i")"
  for f in "${files[@]}"; do
    src="$here/solutions/$name/$f"
    [[ $kind == reference ]] || ((i % 2)) || src="$dir/$f"
    mkdir -p "$(dirname "$sub/$f")"
    { echo "// submission $i"; cat "$src"; } >"$sub/$f"
  done
done
run() { if [[ -n $grader ]]; then KILN_HOME=$here "$grader" --root "$here" "$@"; else "$here/bin/grader" "$@"; fi; }
mkdir -p "$work/warm"
cp -r "$work/submissions/student001" "$work/warm/"
run grade --batch "$work/warm" --module "$module" --out "$work/warm-results" >/dev/null 2>&1 || true
start=$(date +%s.%N)
run grade --batch "$work/submissions" --module "$module" -j "$jobs" --out "$work/results" --format gradescope
end=$(date +%s.%N)
awk -v n="$count" -v s="$start" -v e="$end" -v m="$module" -v j="$jobs" \
  'BEGIN { printf "module %s: %d submissions in %.1f s = %.1f per minute (-j %d)\n", m, n, e - s, 60 * n / (e - s), j }'
head -n 3 "$work/results/gradebook.csv"
