// The challenge rungs of the GPU ladder, register blocking (kiln/gpu.h), on the CPU emulator: their
// products against plain loops in double, and their memory traffic against counts worked out on
// paper. A block computes a 64 × 64 tile of c (kBlockM × kBlockN) through 64 × 8 and 8 × 64 tiles of
// a and b (kBlockK = 8); a thread of the 1D kernel computes 8 results of a column (kThreadM), one of
// the 2D kernel an 8 × 8 block (kThreadM × kThreadN). Sizes are not square and, but for the paper
// launch (64 × 16) · (16 × 64), not multiples of the blocks; inputs are drawn from the run's seed.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/gpu.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::observe;
using testing::random_tensor;
using testing::reference_matmul;

using Size = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // (n, k, m): (n × k) · (k × m)

std::string product(const Size& size) {
  const auto& [n, k, m] = size;
  return fmt::format("({} × {}) · ({} × {})", n, k, k, m);
}

std::int64_t ceil_div(std::int64_t size, std::int64_t per) { return (size + per - 1) / per; }

// What the tests need to know of each kernel; all of it follows from kiln/gpu.h's constants.
struct Rung {
  MatmulKernel kernel;
  const char* name;                // as in MatmulKernel
  std::int64_t threads;            // per block: 64 × 8 or 8 × 8
  std::int64_t products_per_read;  // per inner index and thread: kThreadM or kThreadM · kThreadN
  std::int64_t shared_reads;       // per inner index and thread: 1 + kThreadM, or kThreadM + kThreadN
};
constexpr Rung kRung1d{MatmulKernel::blocktile_1d, "blocktile_1d", (kBlockM / kThreadM) * kBlockN, kThreadM,
                       1 + kThreadM};
constexpr Rung kRung2d{MatmulKernel::blocktile_2d, "blocktile_2d", (kBlockM / kThreadM) * (kBlockN / kThreadN),
                       kThreadM * kThreadN, kThreadM + kThreadN};

// ---- The product ---------------------------------------------------------------------------------

// 1 × 1 × 1 (one thread of 512 or 64 has work), sizes just past a block (65) and between blocks,
// an inner size that is not a multiple of 8, and one exact 64 × 64 tile. The launcher throws
// std::out_of_range when a kernel wrote past the end of c, and kiln::IndexError when a thread
// touched any other element outside the tensors (a load past the edge).
void check_product(const Rung& rung, const char* differs, const char* out_of_bounds, const char* outside) {
  const std::vector<Size> sizes = {{1, 1, 1}, {3, 3, 3}, {64, 16, 64}, {33, 31, 65}, {65, 9, 33}, {70, 45, 37}};
  std::uint64_t stream = 81;
  for (const Size& size : sizes) {
    const auto& [n, k, m] = size;
    const Tensor a = random_tensor({n, k}, stream++), b = random_tensor({k, m}, stream++);
    const auto c = observe(fmt::format("emulate_matmul(a, b, MatmulKernel::{}) of {}", rung.name, product(size)),
                           [&] { return emulate_matmul(a, b, rung.kernel); });
    KILN_JUDGE {
      if (!c.ok() && c.error().is("kiln::IndexError")) {
        KILN_FAIL(outside, {{"size", product(size)}}, c.describe_error());
        return;
      }
      if (!c.ok() && c.error().is("std::out_of_range")) {
        KILN_FAIL(out_of_bounds, {{"size", product(size)}}, c.describe_error());
        return;
      }
    }
    if (!KILN_EXPECT_CLOSE_REL(c, reference_matmul(a, b), 1e-4, 0.0, differs, {{"size", product(size)}})) return;
  }
}

TEST(Gpu, Blocktile1dMatmul) {
  check_product(kRung1d, "blocktile_1d_differs", "blocktile_1d_out_of_bounds", "blocktile_1d_touches_outside");
}

TEST(Gpu, Blocktile2dMatmul) {
  check_product(kRung2d, "blocktile_2d_differs", "blocktile_2d_out_of_bounds", "blocktile_2d_touches_outside");
}

// ---- The counts ----------------------------------------------------------------------------------

// The paper launch first: (64 × 16) · (16 × 64), one block, two steps of 8 over the inner dimension,
// 64 · 16 · 64 = 65,536 multiply-adds.
//   1D: 512 threads, each 2 steps × 8 inner indices × (1 read of b_tile + 8 of a_tile): 73,728
//       shared loads, 9/8 per multiply-add.
//   2D: 64 threads, each 2 × 8 × (8 reads of a_tile + 8 of b_tile): 16,384, 1/4 per multiply-add.
//   (The 16 × 16 tiled kernel reads two per multiply-add: 131,072.)
// Every element of a and of b is read once from global memory. Then sizes with several blocks and
// sizes that are not multiples of the blocks, where each element of a is read once per block
// column, ⌈m / 64⌉ times, and each of b once per block row, ⌈n / 64⌉ times.
const std::vector<Size> kCountSizes = {{64, 16, 64}, {128, 16, 192}, {70, 45, 37}, {33, 31, 65}, {1, 1, 1}};

// The reads of a's and b's elements (fewest, most), then the shared loads by single threads.
std::vector<std::int64_t> plain_counts(const grid::LaunchCounts& c) {
  std::vector<std::int64_t> counts;
  for (const char* name : {"a", "b"}) {
    const auto& reads = c.buffer(name).reads;
    counts.push_back(*std::min_element(reads.begin(), reads.end()));
    counts.push_back(*std::max_element(reads.begin(), reads.end()));
  }
  counts.push_back(c.shared_loads.accesses);
  return counts;
}

void check_counts(const Rung& rung, const char* reads_id, const char* shared_id) {
  std::uint64_t stream = 91;
  for (const Size& size : kCountSizes) {
    const auto& [n, k, m] = size;
    const Tensor a = random_tensor({n, k}, stream++), b = random_tensor({k, m}, stream++);
    const auto observed =
        observe(fmt::format("the counts of emulate_matmul(a, b, MatmulKernel::{}) for {}", rung.name, product(size)),
                [&] {
                  emulate_matmul(a, b, rung.kernel);
                  return plain_counts(grid::last_launch());
                });
    if (!KILN_EXPECT_OK(observed, reads_id,
                        {{"matrix", "a"},
                         {"size", product(size)},
                         {"fewest", "an unknown number"},  // the launch threw: its error follows the message
                         {"most", "an unknown number of"},
                         {"expected", std::to_string(ceil_div(m, kBlockN))}}))
      return;
    KILN_JUDGE {
      const std::vector<std::int64_t>& counts = *observed;
      const std::vector<std::tuple<const char*, std::int64_t, std::int64_t, std::int64_t>> matrices = {
          {"a", counts[0], counts[1], ceil_div(m, kBlockN)}, {"b", counts[2], counts[3], ceil_div(n, kBlockM)}};
      for (const auto& [matrix, fewest, most, expected] : matrices) {
        if (fewest != expected || most != expected) {
          KILN_FAIL(reads_id, {{"matrix", matrix},
                               {"size", product(size)},
                               {"fewest", std::to_string(fewest)},
                               {"most", std::to_string(most)},
                               {"expected", std::to_string(expected)}});
          return;
        }
      }
      // Every thread of every block runs every step, padded with zeros past the edges.
      const std::int64_t inner_indices =
          ceil_div(n, kBlockM) * ceil_div(m, kBlockN) * rung.threads * ceil_div(k, kBlockK) * kBlockK;
      const std::int64_t products = inner_indices * rung.products_per_read, expected = inner_indices * rung.shared_reads;
      const std::int64_t loads = counts[4];
      if (loads != expected) {
        KILN_FAIL(shared_id, {{"size", product(size)},
                              {"loads", std::to_string(loads)},
                              {"products", std::to_string(products)},
                              {"ratio", fmt::format("{:.4g}", double(loads) / double(products))},
                              {"expected", std::to_string(expected)},
                              {"expected_ratio", fmt::format("{:.4g}", double(expected) / double(products))}});
        return;
      }
    }
  }
}

TEST(Gpu, Blocktile1dCounts) { check_counts(kRung1d, "blocktile_1d_reads", "blocktile_1d_shared_loads"); }

TEST(Gpu, Blocktile2dCounts) { check_counts(kRung2d, "blocktile_2d_reads", "blocktile_2d_shared_loads"); }

}  // namespace
}  // namespace kiln
