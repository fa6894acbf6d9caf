#!/usr/bin/env bash
# Batch-grades N submissions of a module (default 50 of module 17) through the sandbox and reports
# submissions per minute. The submissions are the reference solution and the stubs, alternating
# (KIND=mixed), the reference only (KIND=reference), or the reference with every fifth
# submission's tiled_matmul a plain i-j-k loop (KIND=ijk, module 17: it is right, and slow), each
# made distinct by a comment so that every one is compiled. A benchmark: it asserts nothing. The first grade (one submission, untimed)
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
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT  # KEEP=1 keeps the submissions and results
dir=$(ls -d "$here"/modules/"$module"_*/)
name=$(basename "$dir")
mapfile -t files < <(awk '/^student_files:/{f=1;next} f&&/^ *- /{print $2} f&&/^[a-z]/{exit}' "$dir/module.yaml")
for i in $(seq 1 "$count"); do
  sub="$work/submissions/student$(printf %03d "$i")"
  for f in "${files[@]}"; do
    src="$here/solutions/$name/$f"
    [[ $kind != mixed ]] || ((i % 2)) || src="$dir/$f"
    mkdir -p "$(dirname "$sub/$f")"
    { echo "// submission $i"; cat "$src"; } >"$sub/$f"
    if [[ $kind == ijk && $f == src/acceleration.cpp ]] && ! ((i % 5)); then
      python3 - "$sub/$f" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
start = text.index("Tensor tiled_matmul(const Tensor& a, const Tensor& b, int tile_size) {")
end = text.index("\n}\n", start) + 3
plain = """Tensor tiled_matmul(const Tensor& a, const Tensor& b, int tile_size) {
  require_matrices(a, b, "tiled_matmul");
  if (tile_size < 1) throw IndexError("tiled_matmul needs tile_size >= 1, got " + std::to_string(tile_size));
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  const std::int64_t n = a.shape()[0], inner = a.shape()[1], m = b.shape()[1];
  Tensor c = Tensor::zeros({n, m});
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      float sum = 0;
      for (std::int64_t k = 0; k < inner; ++k) sum += ac.data()[i * inner + k] * bc.data()[k * m + j];
      c.data()[i * m + j] = sum;
    }
  return c;
}
"""
open(path, "w").write(text[:start] + plain + text[end:])
PY
    fi
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
# How many submissions earned each score, and each speed-graded check's points.
awk -F, 'NR == 1 { for (i = 5; i <= NF; ++i) if ($i ~ /_speed$/) speed[i] = $i; next }
         { score[$3 "/" $4]++; for (i in speed) points[speed[i] " " $i]++ }
         END { for (s in score) printf "%d submissions scored %s\n", score[s], s
               for (p in points) printf "  %s: %d submissions\n", p, points[p] }' "$work/results/gradebook.csv" | sort
# The speed-graded checks' ratios to the reference, from the results' text.
python3 - "$work/results" <<'PY'
import json, pathlib, re, statistics, sys
ratios = {}
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    for test in json.loads(path.read_text()).get("tests", []):
        found = re.search(r"Speed: ([0-9.]+)× the reference's time", test.get("output", ""))
        if found:
            ratios.setdefault(test["name"].split(":")[0], []).append(float(found.group(1)))
for name, r in sorted(ratios.items()):
    print(f"  {name}: {len(r)} timed, ratio min {min(r):.2f}, median {statistics.median(r):.2f}, max {max(r):.2f}")
PY
