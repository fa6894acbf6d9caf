#!/usr/bin/env bash
# Compares the grader's roofline (build/grader/kiln-roofline) with likwid-bench, an independent
# tool from Debian, on this machine, single thread: peak single-precision FLOP/s from an FMA kernel
# and bandwidth from the STREAM triad. A benchmark: it prints figures and asserts nothing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v likwid-bench >/dev/null || { echo "installing likwid..." >&2; apt-get install -y -qq likwid >/dev/null; }
"$here/bin/grader" doctor >/dev/null 2>&1 || true  # builds the grader and kiln-roofline
kiln=$("$here/build/grader/kiln-roofline")
echo "kiln-roofline: $kiln"
# likwid-bench counts FLOP/s of its single-precision FMA kernel, and the triad's 3 streams of bytes.
flops=$(likwid-bench -t peakflops_sp_avx_fma -W N:32kB:1 2>/dev/null | awk '/^MFlops\/s:/ {print $2 / 1000}')
llc=$(echo "$kiln" | sed 's/.*"llc_bytes": \([0-9]*\).*/\1/')
size=$(( llc * 4 * 3 / 1048576 ))MB
bandwidth=$(likwid-bench -t stream_avx -W N:${size}:1 2>/dev/null | awk '/^MByte\/s:/ {print $2 / 1000}')
echo "likwid-bench:  {\"peak_gflops\": $flops, \"bandwidth_gbs\": $bandwidth} (peakflops_sp_avx_fma 32 kB; stream_avx $size)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * a / b }'; }
kf=$(echo "$kiln" | sed 's/.*"peak_gflops": \([0-9.]*\).*/\1/')
kb=$(echo "$kiln" | sed 's/.*"bandwidth_gbs": \([0-9.]*\).*/\1/')
echo "kiln / likwid: peak $(ratio "$kf" "$flops"), bandwidth $(ratio "$kb" "$bandwidth")"
