// grader bench: the machine's roofline, the module's kernels timed beside their baselines, and
// the plots.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/grader/workspace.h"

namespace kiln::grader {

struct Machine {
  std::string cpu;
  double peak_gflops = 0;    // single thread, FMA loop
  double bandwidth_gbs = 0;  // single thread, STREAM-style triad
  long llc_bytes = 0;
  std::string measured_at;
  // The share of one core the probe got while it measured (its CPU time over its wall time):
  // well under 1 means another program ran at the same time and the figures are too low.
  double core_share = 1;
  std::vector<std::string> warnings;  // for the report: figures measured under load, and the like
};

// The roofline of this machine, measured once and kept in .grader/machine.json (per processor and
// host); `remeasure` measures again.
Machine machine_roofline(const Workspace& ws, bool remeasure);

// Whether the bench's own kernels contradict the machine's figures: a kernel above the peak means
// the peak was measured while the machine was busy. Returns the warning, or "".
std::string implausible_machine(const std::vector<struct BenchKernel>& kernels, const Machine& machine);

struct BenchKernel {
  std::string group, name;
  int role = 0;  // 0 kernel, 1 naive baseline, 2 library baseline (kiln::bench::Role)
  double ms = 0, flops = 0, bytes = 0, extra_bytes = 0;
  double input_bytes = 0;  // the input's size, where the bench measures growth with it (else 0)
  std::string error;  // not written / wrong result / threw: not timed
  double gflops = 0, gbs = 0, intensity = 0, roof_pct = 0, vs_naive = 0, vs_library = 0;
};

// A kernel counted on the grid emulator (`bench --emulator`).
struct CountedKernel {
  std::string group, name;
  int role = 0;
  std::string error;
  std::vector<std::pair<std::string, double>> figures;
  struct Access {
    std::string buffer;
    std::int64_t rows = 0, cols = 0;
    std::vector<std::int64_t> first_request;  // the element each lane loaded, -1: none
  };
  std::vector<Access> accesses;
};

struct BenchReport {
  std::string module, number, title, variant;
  Machine machine;
  std::vector<BenchKernel> kernels;
  std::vector<std::string> commands;
  std::string bars_svg, roofline_svg;  // where the plots were written ("": not drawn)
  std::string growth_svg;              // time against input size, where kernels give input_bytes
  int repetitions = 0;
  bool gpu = false;  // timed on a CUDA device: machine holds the device's figures
  bool emulator = false;  // counted on the grid emulator: counted, not kernels
  std::vector<CountedKernel> counted;
  std::string warp_svg;  // emulator: the first warp's accesses, drawn
};

struct BenchCommand {
  std::string module;
  bool solution = false;
  bool full = false;
  bool remeasure = false;
  bool gpu = false;  // the device/bench kernels on a CUDA device, against cuBLAS
  bool emulator = false;  // the kernels counted on the grid emulator, not timed
  int repetitions = 5;
  double min_time_s = 0.1;  // per repetition
  std::string format = "text";
  std::string out;
  bool verbose = false;
};

BenchReport run_bench(const Workspace& ws, const BenchCommand& cmd);

// Parses Google Benchmark's JSON into kernels (median of the repetitions) and derives the
// figures: GFLOP/s, GB/s, intensity, % of the roofline, ratios to the baselines of each group.
std::vector<BenchKernel> parse_benchmark_json(const std::string& json, const Machine& machine);

// Parses the bench's --kiln-emulator output (one JSON object per counted kernel and line).
std::vector<CountedKernel> parse_counted(const std::string& lines);
// The first warp's first load of each buffer, per kernel: the matrix, the elements its lanes
// touched and the 128-byte segments those lie in.
std::string warp_access_svg(const BenchReport& report);

std::string render_bench_text(const BenchReport& report);
std::string render_bench_json(const BenchReport& report);
std::string roofline_svg(const BenchReport& report);
std::string bars_svg(const BenchReport& report);
// Time against input size, both on logarithmic axes, one line per kernel name over the groups of
// kernels that give input_bytes (module 10's trainers on ever larger corpora).
std::string growth_svg(const BenchReport& report);

}  // namespace kiln::grader
