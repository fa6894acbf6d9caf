// Given: what `grader bench 17 --emulator` counts. The matrix-multiply ladder, naive to
// register-blocked, each launched once on the grid emulator for a 64 × 64 by 64 × 64 product, and
// what the emulator counted (kiln/grid.h): exact figures that depend only on the sizes.
//
//   load transactions   128-byte segments loaded from a and b, over all warps
//   per request a / b   transactions per warp-wide load of a / of b, on average: 1 is perfectly
//                       coalesced, 32 is every lane in a segment of its own
//   store transactions  segments written to c
//   reads of each a / b how many times each element of a / of b was loaded, on average
//   shared loads        single-thread reads of shared memory
//   bank conflicts      shared-memory passes beyond one per request
//   FMA / shared load   multiply-adds (64³) per shared read: what register blocking raises
//   barriers            kiln_syncthreads() passed, over all blocks
//
// Each result is compared with a plain double-precision product first; a wrong one is reported,
// not counted. The first warp's first load of a and of b is drawn as a picture.
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "kiln/bench.h"
#include "kiln/gpu.h"
#include "kiln/grid.h"
#include "kiln/tensor.h"

namespace {

using kiln::bench::Role;

constexpr std::int64_t kSize = 64;

kiln::Tensor ramp(std::int64_t rows, std::int64_t cols, int seed) {
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7 + seed) % 13) / 13.0f - 0.5f;
  return kiln::Tensor({rows, cols}, std::move(values));
}

double mean(const std::vector<std::int64_t>& v) {
  return v.empty() ? 0.0 : static_cast<double>(std::accumulate(v.begin(), v.end(), std::int64_t{0})) / static_cast<double>(v.size());
}

double per_request(const kiln::grid::AccessCounts& c) {
  return c.requests ? static_cast<double>(c.transactions) / static_cast<double>(c.requests) : 0.0;
}

void add(const char* name, kiln::MatmulKernel kernel, Role role) {
  struct State {
    kiln::Tensor a = ramp(kSize, kSize, 1), b = ramp(kSize, kSize, 5), c;
  };
  auto state = std::make_shared<State>();
  kiln::bench::Counted counted;
  counted.group = "matmul 64x64x64 on the emulator";
  counted.name = name;
  counted.role = role;
  counted.run = [state, kernel] {
    state->c = kiln::emulate_matmul(state->a, state->b, kernel);
    const kiln::grid::LaunchCounts& launch = kiln::grid::last_launch();
    const auto& a = launch.buffer("a");
    const auto& b = launch.buffer("b");
    const auto& c = launch.buffer("c");
    const double fma = static_cast<double>(kSize * kSize * kSize);
    const auto shared = launch.shared_loads;
    kiln::bench::Counts counts;
    counts.figures = {
        {"load transactions", static_cast<double>(a.loads.transactions + b.loads.transactions)},
        {"per request a", per_request(a.loads)},
        {"per request b", per_request(b.loads)},
        {"store transactions", static_cast<double>(c.stores.transactions)},
        {"reads of each a", mean(a.reads)},
        {"reads of each b", mean(b.reads)},
        {"shared loads", static_cast<double>(shared.accesses)},
        {"bank conflicts", static_cast<double>(shared.transactions - shared.requests)},
        {"FMA / shared load", shared.accesses ? fma / static_cast<double>(shared.accesses) : 0.0},
        {"barriers", static_cast<double>(launch.barriers)},
    };
    counts.accesses = {{"a", kSize, kSize, a.first_request}, {"b", kSize, kSize, b.first_request}};
    return counts;
  };
  counted.validate = [state]() -> std::string {
    const std::vector<float> a = state->a.to_vector(), b = state->b.to_vector();
    std::vector<float> expected(static_cast<std::size_t>(kSize * kSize));
    for (std::int64_t i = 0; i < kSize; ++i)
      for (std::int64_t j = 0; j < kSize; ++j) {
        double sum = 0;
        for (std::int64_t p = 0; p < kSize; ++p)
          sum += static_cast<double>(a[static_cast<std::size_t>(i * kSize + p)]) * b[static_cast<std::size_t>(p * kSize + j)];
        expected[static_cast<std::size_t>(i * kSize + j)] = static_cast<float>(sum);
      }
    const std::vector<float> c = state->c.to_vector();
    if (c.size() != expected.size()) return "the product has the wrong shape";
    return kiln::bench::compare(c.data(), expected.data(), c.size(), 1e-4);
  };
  kiln::bench::add_counted(std::move(counted));
}

}  // namespace

// Called by register_benchmarks (bench.cpp).
void register_emulator_counts() {
  add("matmul_naive", kiln::MatmulKernel::naive, Role::naive);
  add("matmul_coalesced", kiln::MatmulKernel::coalesced, Role::kernel);
  add("matmul_tiled", kiln::MatmulKernel::tiled, Role::kernel);
  add("blocktile_1d", kiln::MatmulKernel::blocktile_1d, Role::kernel);
  add("blocktile_2d", kiln::MatmulKernel::blocktile_2d, Role::kernel);
}
