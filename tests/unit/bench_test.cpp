#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "kiln/grader/bench.h"

namespace kiln::grader {
namespace {

// The shape of Google Benchmark's JSON with repetitions and aggregates only.
const char* kJson = R"json({"context": {}, "benchmarks": [
  {"name": "mm/naive/real_time_median", "run_name": "mm/naive/real_time", "run_type": "aggregate",
   "aggregate_name": "median", "real_time": 100.0, "time_unit": "ms", "flops": 2e9, "bytes": 1e7, "extra_bytes": 0,
   "role": 1},
  {"name": "mm/naive/real_time_mean", "run_name": "mm/naive/real_time", "run_type": "aggregate",
   "aggregate_name": "mean", "real_time": 999.0, "time_unit": "ms", "flops": 2e9, "bytes": 1e7, "role": 1},
  {"name": "mm/naive/real_time_cv", "run_name": "mm/naive/real_time", "run_type": "aggregate",
   "aggregate_name": "cv", "real_time": 0.01, "time_unit": "ms", "flops": 0, "bytes": 0, "role": NaN},
  {"name": "mm/tiled/real_time_median", "run_name": "mm/tiled/real_time", "run_type": "aggregate",
   "aggregate_name": "median", "real_time": 25000.0, "time_unit": "us", "flops": 2e9, "bytes": 1e7, "role": 0},
  {"name": "mm/eigen/real_time_median", "run_name": "mm/eigen/real_time", "run_type": "aggregate",
   "aggregate_name": "median", "real_time": 10.0, "time_unit": "ms", "flops": 2e9, "bytes": 1e7, "role": 2},
  {"name": "mm/blocked/real_time", "run_name": "mm/blocked/real_time", "run_type": "iteration",
   "error_occurred": true, "error_message": "not written yet: blocked_matmul (src/acceleration.cpp:9)"}
]})json";

TEST(ParseBenchmarkJson, TakesTheMedianAndDerivesRatesAndRatios) {
  const Machine machine{"cpu", 100.0, 10.0, 0, ""};
  const auto kernels = parse_benchmark_json(kJson, machine);
  ASSERT_EQ(kernels.size(), 4u);
  const BenchKernel& naive = kernels[0];
  EXPECT_EQ(naive.group, "mm");
  EXPECT_EQ(naive.name, "naive");
  EXPECT_DOUBLE_EQ(naive.ms, 100.0) << "the median, not the mean";
  EXPECT_DOUBLE_EQ(naive.gflops, 20.0);
  EXPECT_DOUBLE_EQ(naive.intensity, 200.0);
  EXPECT_DOUBLE_EQ(naive.roof_pct, 20.0) << "compute-bound: 20 of a 100 GFLOP/s roof";
  const BenchKernel& tiled = kernels[1];
  EXPECT_DOUBLE_EQ(tiled.ms, 25.0) << "microseconds converted";
  EXPECT_DOUBLE_EQ(tiled.vs_naive, 4.0);
  EXPECT_DOUBLE_EQ(tiled.vs_library, 0.4);
  EXPECT_NE(kernels[3].error.find("not written yet"), std::string::npos);
  EXPECT_EQ(kernels[3].ms, 0.0) << "a kernel that failed validation is never timed";
}

TEST(ParseBenchmarkJson, AMemoryBoundKernelIsMeasuredAgainstTheSlopedRoof) {
  const Machine machine{"cpu", 100.0, 10.0, 0, ""};
  const auto kernels = parse_benchmark_json(
      R"({"benchmarks": [{"run_name": "g/k", "aggregate_name": "median", "run_type": "aggregate",
          "real_time": 1.0, "time_unit": "s", "flops": 1e9, "bytes": 4e9, "role": 0}]})", machine);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(kernels[0].intensity, 0.25);
  EXPECT_DOUBLE_EQ(kernels[0].roof_pct, 40.0) << "1 GFLOP/s of a 0.25 × 10 = 2.5 GFLOP/s roof";
}

TEST(BenchPlots, AreWellFormedSvgWithEveryTimedKernel) {
  BenchReport report;
  report.number = "17";
  report.title = "Acceleration";
  report.machine = {"cpu", 100.0, 10.0, 0, ""};
  report.kernels = parse_benchmark_json(kJson, report.machine);
  const std::string roof = roofline_svg(report), bars = bars_svg(report);
  for (const std::string& svg : {roof, bars}) {
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
  }
  EXPECT_NE(roof.find(">tiled: "), std::string::npos) << "the legend names every plotted kernel";
  EXPECT_NE(bars.find("not timed"), std::string::npos) << "the unwritten kernel shows as not timed";
  EXPECT_NE(bars.find("naive baseline"), std::string::npos) << "the bars have a legend";
  EXPECT_NE(bars.find(">10×<"), std::string::npos) << "and one axis for every group";
}

// Module 10's shape: two trainers per corpus size, no arithmetic counted, the sizes as input_bytes.
TEST(BenchGrowth, DrawsOneLinePerKernelAgainstTheInputSizes) {
  std::string json = R"({"benchmarks": [)";
  const char* sizes[] = {"16", "32", "64"};
  for (int i = 0; i < 3; ++i) {
    const double bytes = 16384.0 * (1 << i);
    for (const auto& [name, role, ms] : {std::tuple{"train_bpe", 1, 100.0 * (1 << i)}, std::tuple{"fast", 0, 5.0 * (1 << i)}}) {
      json += fmt::format(R"({}{{"run_name": "bpe {} KiB/{}", "run_type": "aggregate", "aggregate_name": "median",
          "real_time": {}, "time_unit": "ms", "flops": 0, "bytes": 0, "input_bytes": {}, "role": {}}})",
                          json.back() == '[' ? "" : ", ", sizes[i], name, ms, bytes, role);
    }
  }
  json += "]}";
  BenchReport report;
  report.number = "10";
  report.title = "Tokenization";
  report.kernels = parse_benchmark_json(json, Machine{"cpu", 100.0, 10.0, 0, ""});
  ASSERT_EQ(report.kernels.size(), 6u);
  EXPECT_DOUBLE_EQ(report.kernels[5].input_bytes, 65536.0);
  EXPECT_DOUBLE_EQ(report.kernels[5].vs_naive, 20.0);
  const std::string svg = growth_svg(report);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<') - std::count(svg.begin(), svg.end(), '>'), 0);
  for (const char* tick : {">16 KiB<", ">32 KiB<", ">64 KiB<", ">1 ms<", ">10 ms<", ">100 ms<", ">1 s<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << "an axis tick " << tick << " in\n" << svg;
  }
  EXPECT_EQ(svg.find(">0.1 ms<"), std::string::npos) << "the time axis starts at the fastest time's decade";
  EXPECT_NE(svg.find(">train_bpe (naive)<"), std::string::npos) << "the legend names both lines";
  EXPECT_EQ(bars_svg(report).find("library baseline"), std::string::npos) << "no library baseline to name";
  EXPECT_NE(svg.find(">fast<"), std::string::npos);
  EXPECT_NE(svg.find("fast: 20.0× the naive at 64 KiB"), std::string::npos) << "the ratio at the largest size";
  std::size_t lines = 0;
  for (std::size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  // Without flops, the text report shows times and ratios, not GFLOP/s.
  const std::string text = render_bench_text(report);
  EXPECT_EQ(text.find("GFLOP/s   "), std::string::npos) << text;
  EXPECT_NE(text.find("20.00×"), std::string::npos) << text;
}

TEST(BenchDurations, ReadInTheUnitThatFits) {
  EXPECT_EQ(format_duration(1680.0), "1.68 s");
  EXPECT_EQ(format_duration(16.7), "16.7 ms");
  EXPECT_EQ(format_duration(0.42), "420 µs");
  EXPECT_EQ(format_duration(0.000085), "85.0 ns");
}

TEST(BenchMachine, AKernelAboveThePeakMeansThePeakWasMeasuredUnderLoad) {
  Machine machine{"cpu", 100.0, 10.0, 0, ""};
  std::vector<BenchKernel> kernels(1);
  kernels[0].name = "blocked";
  kernels[0].gflops = 90;
  EXPECT_EQ(implausible_machine(kernels, machine), "");
  kernels[0].gflops = 130;
  EXPECT_NE(implausible_machine(kernels, machine).find("measured while the machine was busy"), std::string::npos);
}

}  // namespace
}  // namespace kiln::grader
