#!/usr/bin/env bash
# Module 17 on a machine with a CUDA device: the device checks of the reference solution, every
# device mutant (the non-atomic scatter-add among them), and `grader bench 17 --gpu`. Run from the
# repository root with .device-debs/ beside it (tests/gpu/fetch-packages.sh). Results go to $OUT
# (or ./gpu-results): doctor.txt, check.txt, verify.txt, bench.txt and bench.json.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/gpu-results}
mkdir -p "$out"

# The libraries, unpacked into a prefix of their own (not into /).
prefix=/tmp/kiln-deps
mkdir -p "$prefix"
for deb in "$root"/.device-debs/*.deb; do dpkg -x "$deb" "$prefix"; done
export CMAKE_PREFIX_PATH=$prefix/usr
export CPATH=$prefix/usr/include
export LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/usr/local/cuda/bin:$PATH
export KILN_HOME=$root NO_COLOR=1

build=/tmp/kiln-build
cmake -S "$root" -B "$build" -G Ninja -DKILN_BUILD_TESTS=OFF > "$out/configure.txt" 2>&1 || { tail -30 "$out/configure.txt"; exit 1; }
ninja -C "$build" kiln-grader > "$out/build.txt" 2>&1 || { tail -30 "$out/build.txt"; exit 1; }
grader=("$build/grader/kiln-grader" --root "$root")

"${grader[@]}" doctor > "$out/doctor.txt" 2>&1
nvidia-smi -L >> "$out/doctor.txt" 2>&1
"${grader[@]}" check 17 --solution > "$out/check.txt" 2>&1
echo "check 17 --solution: exit $?" | tee -a "$out/check.txt"
"${grader[@]}" verify 17 > "$out/verify.txt" 2>&1
echo "verify 17: exit $?" | tee -a "$out/verify.txt"
"${grader[@]}" bench 17 --gpu --solution --format json --out "$out/bench.json" > "$out/bench.txt" 2> "$out/bench-errors.txt"
echo "bench 17 --gpu: exit $?" | tee -a "$out/bench.txt"
grep -E "gpu_device|mutant gpu_device|catalogued|sound|problem" "$out/check.txt" "$out/verify.txt"
cat "$out/bench.txt" "$out/bench-errors.txt"
