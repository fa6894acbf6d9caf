// main() of every module bench: times the registered kernels with Google Benchmark. Each kernel is
// run once and checked against its reference before every timed repetition; a wrong or unwritten
// kernel is reported as an error and never timed.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <exception>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/bench.h"
#include "kiln/errors.h"

namespace kiln::bench {

namespace {
std::vector<Kernel>& registry() {
  static std::vector<Kernel> kernels;
  return kernels;
}
}  // namespace

std::vector<Counted>& counted() {
  static std::vector<Counted> kernels;
  return kernels;
}

void add(Kernel kernel) { registry().push_back(std::move(kernel)); }
void add_counted(Counted kernel) { counted().push_back(std::move(kernel)); }

namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else out += c;
  }
  return out + "\"";
}

// --kiln-emulator: every counted kernel once, one JSON object per line on stdout.
int count_kernels() {
  for (const Counted& kernel : counted()) {
    std::string error, figures, accesses;
    try {
      const Counts counts = kernel.run();
      error = kernel.validate ? kernel.validate() : "";
      if (!error.empty()) error = "wrong result, not counted: " + error;
      for (const Figure& f : counts.figures)  // JSON has no NaN or infinity: those are null
        figures += fmt::format("{}{{\"name\": {}, \"value\": {}}}", figures.empty() ? "" : ", ", quoted(f.name),
                               std::isfinite(f.value) ? fmt::format("{}", f.value) : std::string("null"));
      for (const WarpAccess& a : counts.accesses)
        accesses += fmt::format("{}{{\"buffer\": {}, \"rows\": {}, \"cols\": {}, \"first_request\": [{}]}}",
                                accesses.empty() ? "" : ", ", quoted(a.buffer), a.rows, a.cols,
                                fmt::join(a.first_request, ", "));
    } catch (const kiln::NotImplemented& e) {
      error = e.what();
    } catch (const std::exception& e) {
      error = std::string("threw, not counted: ") + e.what();
    }
    if (!error.empty()) figures.clear(), accesses.clear();
    std::printf("{\"group\": %s, \"name\": %s, \"role\": %d, \"error\": %s, \"figures\": [%s], \"accesses\": [%s]}\n",
                quoted(kernel.group).c_str(), quoted(kernel.name).c_str(), static_cast<int>(kernel.role),
                quoted(error).c_str(), figures.c_str(), accesses.c_str());
  }
  return 0;
}

}  // namespace

std::vector<float> uniform_values(std::size_t count, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(generator() >> 8) * (2.0f / 16777216.0f) - 1.0f;
  return values;
}

std::string compare(const float* actual, const float* expected, std::size_t n, double tolerance) {
  double worst = 0;
  std::size_t where = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double diff = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    const double allowed = tolerance * (1.0 + std::fabs(static_cast<double>(expected[i])));
    if (!(diff <= allowed) && (std::isnan(diff) || diff > worst)) {
      worst = std::isnan(diff) ? INFINITY : diff;
      where = i;
    }
  }
  if (worst == 0) return "";
  return fmt::format("largest difference {:.3g} at element {} (got {:.6g}, expected {:.6g})", worst, where,
                     actual[where], expected[where]);
}

}  // namespace kiln::bench

int main(int argc, char** argv) {
  kiln::bench::Options options;
  std::vector<char*> args;
  bool emulator = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kiln-full") == 0) options.full = true;
    else if (std::strcmp(argv[i], "--kiln-emulator") == 0) emulator = true;
    else args.push_back(argv[i]);
  }
  int count = static_cast<int>(args.size());
  register_benchmarks(options);
  if (emulator) return kiln::bench::count_kernels();
  for (auto& kernel : kiln::bench::registry()) {
    auto* b = benchmark::RegisterBenchmark((kernel.group + "/" + kernel.name).c_str(), [&kernel](benchmark::State& state) {
      state.counters["flops"] = kernel.flops;
      state.counters["bytes"] = kernel.bytes;
      state.counters["extra_bytes"] = kernel.extra_bytes;
      state.counters["input_bytes"] = kernel.input_bytes;
      state.counters["role"] = static_cast<double>(kernel.role);
      std::string error;
      try {
        kernel.run();
        error = kernel.validate ? kernel.validate() : "";
        if (!error.empty()) error = "wrong result, not timed: " + error;
      } catch (const kiln::NotImplemented& e) {
        error = e.what();
      } catch (const std::exception& e) {
        error = std::string("threw, not timed: ") + e.what();
      }
      if (!error.empty()) {
        state.SkipWithError(error.c_str());
        return;
      }
      for (auto _ : state) kernel.run();
    });
    b->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  benchmark::Initialize(&count, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
