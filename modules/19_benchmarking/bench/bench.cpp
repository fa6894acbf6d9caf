// Given: the bench of module 19, `grader bench 19`. Your harness measures something real.
//
// Two versions of one 256×256 matrix product, both checked against a product computed here in
// double before anything is timed:
//   loops i-j-p   the definition as written, c[i, j] += a[i, p]·b[p, j] with p innermost, so the
//                 innermost loop walks down a column of B, 256 floats (1 KiB) per step
//   matmul (01)   module 01's matmul, loops i-p-j: the innermost loop walks along rows of B and C
// Same arithmetic (2·256³ ≈ 34 million operations), different memory order.
//
// While the bench is set up, your measure() times each of them (3 warm-up calls, 20 samples,
// steady_seconds), your median, mean_confidence_interval and tukey_outliers summarise the samples,
// and your welch_compare decides whether matmul (01) is really faster than loops i-j-p. The results
// head the table, in the group's title; below it Google Benchmark times the same two kernels its
// own way (interleaved repetitions, median reported), so your numbers stand beside an independent
// measurement of the same code on the same machine.
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/bench.h"
#include "kiln/benchmarking.h"
#include "kiln/tensor.h"

namespace {

using kiln::Tensor;
using kiln::bench::Role;
using kiln::bench::uniform_values;

constexpr std::int64_t kSize = 256;

// A and B (n, n), row-major, and their product computed in double.
struct Problem {
  std::int64_t n = kSize;
  std::vector<float> a, b, expected;

  Problem() {
    const auto count = static_cast<std::size_t>(n * n);
    a = uniform_values(count, 3);
    b = uniform_values(count, 11);
    std::vector<double> c(count, 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t p = 0; p < n; ++p)
        for (std::int64_t j = 0; j < n; ++j) c[i * n + j] += static_cast<double>(a[i * n + p]) * b[p * n + j];
    expected.assign(c.begin(), c.end());
  }

  // "" when c (n·n values, row-major) is the product, to float accuracy.
  std::string check(const float* c) const {
    const std::string difference = kiln::bench::compare(c, expected.data(), expected.size(), 1e-4);
    return difference.empty() ? "" : "the product: " + difference;
  }
};

// The two versions, each keeping its last product for the check.
struct Versions {
  std::shared_ptr<Problem> problem = std::make_shared<Problem>();
  std::vector<float> loops_c = std::vector<float>(static_cast<std::size_t>(kSize * kSize));
  Tensor matmul_c;
  std::optional<Tensor> a, b;  // built on first use: they need module 01's Tensor

  void loops_ijp() {
    const std::int64_t n = problem->n;
    const float* a_data = problem->a.data();
    const float* b_data = problem->b.data();
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (std::int64_t p = 0; p < n; ++p) sum += a_data[i * n + p] * b_data[p * n + j];
        loops_c[static_cast<std::size_t>(i * n + j)] = sum;
      }
    }
  }
  void matmul_01() {
    if (!a) a = Tensor({kSize, kSize}, problem->a);
    if (!b) b = Tensor({kSize, kSize}, problem->b);
    matmul_c = kiln::matmul(*a, *b);
  }
  std::string check_loops() const { return problem->check(loops_c.data()); }
  std::string check_matmul() const {
    if (matmul_c.shape() != kiln::Shape{kSize, kSize}) return "the product has shape " + kiln::to_string(matmul_c.shape());
    return problem->check(matmul_c.contiguous().data());
  }
};

std::string milliseconds(double seconds) { return fmt::format("{:.3g} ms", seconds * 1e3); }

// "median 25.1 ms, mean in [24.9 ms, 25.3 ms], 2 outliers" from your statistics.
std::string summary(const std::vector<double>& samples) {
  const kiln::Interval ci = kiln::mean_confidence_interval(samples, 0.95);
  const std::size_t outliers = kiln::tukey_outliers(samples).indices.size();
  return fmt::format("median {}, mean in [{}, {}], {} outlier{}", milliseconds(kiln::median(samples)),
                     milliseconds(ci.low), milliseconds(ci.high), outliers, outliers == 1 ? "" : "s");
}

// Your harness on both versions, as one line for the group's title.
std::string your_harness(Versions& v) {
  const kiln::MeasureOptions options{3, 20};
  try {
    // Check before timing: a wrong product is not worth measuring.
    v.loops_ijp();
    if (const std::string wrong = v.check_loops(); !wrong.empty()) return "loops i-j-p is wrong: " + wrong;
    v.matmul_01();
    if (const std::string wrong = v.check_matmul(); !wrong.empty()) return "matmul (01) is wrong: " + wrong;
    const std::vector<double> loops = kiln::measure([&v] { v.loops_ijp(); }, options);
    const std::vector<double> matmul = kiln::measure([&v] { v.matmul_01(); }, options);
    const kiln::Comparison c = kiln::welch_compare(loops, matmul);
    return fmt::format("loops i-j-p {}; matmul (01) {}; welch_compare: matmul (01) minus loops i-j-p = {} in [{}, {}], {}",
                       summary(loops), summary(matmul), milliseconds(c.difference), milliseconds(c.interval.low),
                       milliseconds(c.interval.high), c.real ? "real" : "not real");
  } catch (const kiln::NotImplemented& e) {
    return "not measured: " + e.function() + " is not written yet";
  } catch (const std::exception& e) {
    return std::string("not measured, it threw: ") + e.what();
  }
}

}  // namespace

void register_benchmarks(const kiln::bench::Options&) {
  auto versions = std::make_shared<Versions>();
  // Google Benchmark's names split at their first '/': a title shows U+2215 (∕) in its place.
  std::string title;
  for (const char ch : "matmul 256x256 · your harness, 3 warm-up and 20 timed calls each, 95% intervals: " +
                           your_harness(*versions)) {
    title += ch == '/' ? std::string("\u2215") : std::string(1, ch);
  }
  const double n = static_cast<double>(kSize);

  kiln::bench::Kernel loops;
  loops.group = title;
  loops.name = "loops i-j-p";
  loops.role = Role::naive;
  loops.flops = 2 * n * n * n;
  loops.bytes = 3 * n * n * 4;
  loops.run = [versions] { versions->loops_ijp(); };
  loops.validate = [versions] { return versions->check_loops(); };
  kiln::bench::add(std::move(loops));

  kiln::bench::Kernel matmul;
  matmul.group = title;
  matmul.name = "matmul (01)";
  matmul.role = Role::kernel;
  matmul.flops = 2 * n * n * n;
  matmul.bytes = 3 * n * n * 4;
  matmul.run = [versions] { versions->matmul_01(); };
  matmul.validate = [versions] { return versions->check_matmul(); };
  kiln::bench::add(std::move(matmul));
}
