// The challenge rungs of the GPU ladder, register blocking (kiln/gpu.h), on the CPU emulator: their
// products against plain loops in double, and their memory traffic against counts worked out on
// paper. A block computes a 64 × 64 tile of c (kBlockM × kBlockN) through 64 × 8 and 8 × 64 tiles of
// a and b (kBlockK = 8); a thread of the 1D kernel computes 8 results of a column (kThreadM), one of
// the 2D kernel an 8 × 8 block (kThreadM × kThreadN). Sizes are not square and, but for the paper
// launch (64 × 16) · (16 × 64), not multiples of the blocks; inputs are drawn from the run's seed.
#include <algorithm>
#include <cstdint>
#include <set>
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

// The reads of a's and b's elements (fewest, most), the shared loads by single threads, then the
// loads of a (warp requests, 128-byte transactions, the most of one request); and the element of
// a each lane of block (0, 0)'s first warp loaded first (-1: none), as `grader bench 17
// --emulator` draws it.
using BlocktileCounts = std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>;
BlocktileCounts plain_counts(const grid::LaunchCounts& c) {
  std::vector<std::int64_t> counts;
  for (const char* name : {"a", "b"}) {
    const auto& reads = c.buffer(name).reads;
    counts.push_back(*std::min_element(reads.begin(), reads.end()));
    counts.push_back(*std::max_element(reads.begin(), reads.end()));
  }
  counts.push_back(c.shared_loads.accesses);
  const grid::AccessCounts& a = c.buffer("a").loads;
  counts.insert(counts.end(), {a.requests, a.transactions, a.max_per_request});
  return {counts, c.buffer("a").first_request};
}

// ---- The loads of a as kiln/gpu.h states them, counted here -------------------------------------

// The elements of a (flat, row-major n × k) that each thread of a block loads, in its order, for the
// block whose tile of c starts at row row0: at every step, thread t loads elements t, t + threads,
// ... of the 512 of a_tile, element e being a_tile[e / 8][e % 8] (1D: 512 threads, element t alone,
// a_tile[t / 8][t % 8]; 2D: 64 threads, t, t + 64, ..., t + 448), and only those inside a.
std::vector<std::vector<std::int64_t>> stated_a_loads(const Rung& rung, const Size& size, std::int64_t row0) {
  const auto& [n, k, m] = size;
  std::vector<std::vector<std::int64_t>> loads(static_cast<std::size_t>(rung.threads));
  for (std::int64_t t = 0; t < rung.threads; ++t)
    for (std::int64_t inner = 0; inner < k; inner += kBlockK)
      for (std::int64_t e = t; e < kBlockM * kBlockK; e += rung.threads) {
        const std::int64_t r = e / kBlockK, i = e % kBlockK;
        if (row0 + r < n && inner + i < k) loads[static_cast<std::size_t>(t)].push_back((row0 + r) * k + inner + i);
      }
  return loads;
}

struct LoadCounts {
  std::int64_t requests = 0, transactions = 0, most = 0;
};

// Those loads counted as kiln/grid.h counts them: the j-th load of a by each lane of a warp (32
// threads in order) is one request, costing one transaction per 128-byte segment (32 floats) its
// lanes touch. Every block column loads the same rows of a, so the block rows are counted once and
// multiplied by ⌈m / 64⌉.
LoadCounts stated_a_counts(const Rung& rung, const Size& size) {
  const auto& [n, k, m] = size;
  constexpr std::int64_t kWarp = 32, kFloatsPerSegment = 128 / sizeof(float);
  LoadCounts counts;
  for (std::int64_t by = 0; by < ceil_div(n, kBlockM); ++by) {
    const auto loads = stated_a_loads(rung, size, by * kBlockM);
    for (std::int64_t first = 0; first < rung.threads; first += kWarp) {
      std::size_t longest = 0;
      for (std::int64_t t = first; t < first + kWarp; ++t) longest = std::max(longest, loads[static_cast<std::size_t>(t)].size());
      for (std::size_t j = 0; j < longest; ++j) {
        std::set<std::int64_t> segments;
        for (std::int64_t t = first; t < first + kWarp; ++t)
          if (j < loads[static_cast<std::size_t>(t)].size()) segments.insert(loads[static_cast<std::size_t>(t)][j] / kFloatsPerSegment);
        const auto cost = static_cast<std::int64_t>(segments.size());
        counts.requests += 1;
        counts.transactions += cost;
        counts.most = std::max(counts.most, cost);
      }
    }
  }
  counts.requests *= ceil_div(m, kBlockN);
  counts.transactions *= ceil_div(m, kBlockN);
  return counts;
}

// a[r, c] of a flat element of a (n × k), as a detail names it.
std::string element_of_a(std::int64_t element, std::int64_t k) {
  return element < 0 ? "nothing" : fmt::format("a[{}, {}]", element / k, element % k);
}

// Reports `id` unless the loads of a cost what the stated pattern costs; the detail names the
// first lane of block (0, 0)'s first warp whose first element differs. Judging only.
bool expect_stated_a_loads(const char* file, int line, const Rung& rung, const Size& size, const std::string& call,
                           const std::vector<std::int64_t>& counts, const std::vector<std::int64_t>& first_request,
                           const char* id) {
  const LoadCounts expected = stated_a_counts(rung, size);
  const std::int64_t requests = counts[5], transactions = counts[6], most = counts[7];
  if (requests == expected.requests && transactions == expected.transactions) return true;
  const std::int64_t k = std::get<1>(size);
  const auto stated = stated_a_loads(rung, size, 0);
  std::string lanes = "block (0, 0)'s first warp loads a first as stated: the difference lies in a later request";
  for (std::size_t lane = 0; lane < 32 && lane < stated.size(); ++lane) {
    const std::int64_t want = stated[lane].empty() ? -1 : stated[lane][0];
    const std::int64_t got = lane < first_request.size() ? first_request[lane] : -1;
    if (got == want) continue;
    lanes = fmt::format("lane {} of block (0, 0)'s first warp loaded {} first, where its element of a_tile is {}", lane,
                        element_of_a(got, k), element_of_a(want, k));
    break;
  }
  testing::report_failure(file, line, id,
                          {{"size", product(size)},
                           {"transactions", testing::counted(transactions, "128-byte transaction")},
                           {"requests", testing::counted(requests, "warp request")},
                           {"most", std::to_string(most)},
                           {"expected_transactions", testing::counted(expected.transactions, "transaction")},
                           {"expected_requests", testing::counted(expected.requests, "request")},
                           {"expected_most", std::to_string(expected.most)}},
                          fmt::format("{}: {}", call, lanes));
  return false;
}

void check_counts(const Rung& rung, const char* reads_id, const char* shared_id, const char* a_loads_id) {
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
      const std::vector<std::int64_t>& counts = observed->first;
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
      // Which thread loads which element of a_tile: the pattern kiln/gpu.h states, whose warps
      // read 4 rows of a, 8 neighbouring floats each, per request. Any other one-to-one cover of
      // the tile gives the same product, reads and shared loads, and other transactions.
      if (!expect_stated_a_loads(__FILE__, __LINE__, rung, size, observed.call(), counts, observed->second, a_loads_id))
        return;
    }
  }
}

TEST(Gpu, Blocktile1dCounts) {
  check_counts(kRung1d, "blocktile_1d_reads", "blocktile_1d_shared_loads", "blocktile_1d_a_loads_scattered");
}

TEST(Gpu, Blocktile2dCounts) {
  check_counts(kRung2d, "blocktile_2d_reads", "blocktile_2d_shared_loads", "blocktile_2d_a_loads_scattered");
}

}  // namespace
}  // namespace kiln
