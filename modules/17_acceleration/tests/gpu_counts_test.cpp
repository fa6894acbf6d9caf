// What the GPU kernels cost, as the emulator counts it (kiln/grid.h): 128-byte transactions per
// warp, reads of each element, shared-memory passes. The counts depend only on the sizes, never on
// the values or the timing, so every number judged here is exact. Inputs are still drawn from the
// run's seed, and the sizes are not square and not multiples of the 16 × 16 block.
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

using Size = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // (n, k, m): (n × k) · (k × m)

std::string product(const Size& size) {
  const auto& [n, k, m] = size;
  return fmt::format("({} × {}) · ({} × {})", n, k, k, m);
}

std::int64_t blocks(std::int64_t size) { return (size + kTile - 1) / kTile; }

// ---- The emulator's own counts, on launches worked out by hand --------------------------------
// These kernels are the test's own: they prove the counters before any count of yours is judged.

// Thread t (numbered x first, then y, as CUDA numbers them) reads x[t · stride] and writes it out.
KILN_GLOBAL void copy_strided(const float* x, float* out, int stride) {
  const int t = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  kiln_store(&out[t], kiln_load(&x[t * stride]));
}

// Thread (x, y) of a 16 × 4 block reads x[y · 32 + x]: rows of 16 floats, 32 floats apart.
KILN_GLOBAL void copy_rows(const float* x, float* out) {
  kiln_store(&out[threadIdx.y * 16 + threadIdx.x], kiln_load(&x[threadIdx.y * 32 + threadIdx.x]));
}

// One warp fills 64 shared words (two stores each), waits, and thread t reads word (t · stride) mod 64.
KILN_GLOBAL void read_shared_strided(float* out, int stride) {
  KILN_SHARED(float) words[64];
  const int t = static_cast<int>(threadIdx.x);
  words[t] = static_cast<float>(t);
  words[t + 32] = static_cast<float>(t + 32);
  kiln_syncthreads();
  kiln_store(&out[t], words[(t * stride) % 64]);
}

// Every thread adds 1 into total[0].
KILN_GLOBAL void count_threads(float* total) { kiln_atomic_add(&total[0], 1.0f); }

const grid::LaunchCounts& run_copy_strided(grid::Dim3 block, int stride, std::size_t threads) {
  static std::vector<float> x, out;
  x.assign(threads * static_cast<std::size_t>(stride) + 1, 1.0f);
  out.assign(threads, 0.0f);
  const float* x_ptr = grid::track(static_cast<const float*>(x.data()), x.size(), x.size(), "x");
  float* out_ptr = grid::track(out.data(), out.size(), out.size(), "out");
  grid::launch({1, 1, 1}, block, copy_strided, x_ptr, out_ptr, stride);
  return grid::last_launch();
}

const grid::LaunchCounts& run_shared(int stride) {
  static std::vector<float> out;
  out.assign(32, 0.0f);
  grid::launch({1, 1, 1}, {32, 1, 1}, read_shared_strided, grid::track(out.data(), out.size(), out.size(), "out"),
               stride);
  return grid::last_launch();
}

// (requests, transactions, largest transactions of one request)
std::tuple<std::int64_t, std::int64_t, std::int64_t> summary(const grid::AccessCounts& c) {
  return {c.requests, c.transactions, c.max_per_request};
}
using Triple = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

void prove_the_counters() {
  const char* broken = "the emulator's own counts (src/grid.cpp) are wrong: the course's code is broken";
  // One warp (block 32 × 1) reads x[0..31]: bytes 0 to 127, one 128-byte segment. One request, one
  // transaction; the stores of out likewise; each of the 32 elements read once.
  {
    const auto& c = run_copy_strided({32, 1, 1}, 1, 32);
    EXPECT_EQ(summary(c.buffer("x").loads), Triple(1, 1, 1)) << broken;
    EXPECT_EQ(summary(c.buffer("out").stores), Triple(1, 1, 1)) << broken;
    EXPECT_EQ(c.buffer("x").loads.accesses, 32) << broken;
    EXPECT_EQ(std::vector<std::int64_t>(c.buffer("x").reads.begin(), c.buffer("x").reads.begin() + 32),
              std::vector<std::int64_t>(32, 1))
        << broken;
    EXPECT_EQ(c.warps, 1) << broken;
  }
  // Stride 32: thread t reads byte 128·t, so each thread has a segment of its own: 32 transactions
  // for the one request.
  {
    const auto& c = run_copy_strided({32, 1, 1}, 32, 32);
    EXPECT_EQ(summary(c.buffer("x").loads), Triple(1, 32, 32)) << broken;
  }
  // Stride 2: bytes 0, 8, ..., 248, two segments.
  {
    const auto& c = run_copy_strided({32, 1, 1}, 2, 32);
    EXPECT_EQ(summary(c.buffer("x").loads), Triple(1, 2, 2)) << broken;
  }
  // Block 16 × 4 = 64 threads, two warps. Numbered x first, warp 0 is rows y = 0 and 1: floats 0-15
  // and 32-47, bytes 0-63 and 128-191, two segments; warp 1 (y = 2, 3) bytes 256-319 and 384-447,
  // two more. 2 requests, 4 transactions. (Warps cut y first would touch 4 segments each: 8.)
  {
    static std::vector<float> x(128, 1.0f), out(64, 0.0f);
    const float* x_ptr = grid::track(static_cast<const float*>(x.data()), x.size(), x.size(), "x");
    float* out_ptr = grid::track(out.data(), out.size(), out.size(), "out");
    grid::launch({1, 1, 1}, {16, 4, 1}, copy_rows, x_ptr, out_ptr);
    const auto& c = grid::last_launch();
    EXPECT_EQ(summary(c.buffer("x").loads), Triple(2, 4, 2)) << broken;
    EXPECT_EQ(c.warps, 2) << broken;
  }
  // Shared memory, 32 banks of 4-byte words. The stores words[t] and words[t + 32] each hit 32
  // banks once: 2 requests, 2 passes. One barrier.
  // Stride 0: all 32 threads read word 0, one address: a broadcast, 1 pass.
  // Stride 1: words 0-31, one per bank: 1 pass.
  // Stride 2: words 0, 2, ..., 62; word 2t is in bank 2t mod 32, so threads t and t + 16 both use
  // bank 2t (words 2t and 2t + 32): a 2-way conflict, 2 passes.
  const std::vector<std::pair<int, Triple>> shared_cases = {{0, {1, 1, 1}}, {1, {1, 1, 1}}, {2, {1, 2, 2}}};
  for (const auto& [stride, expected] : shared_cases) {
    const auto& c = run_shared(stride);
    EXPECT_EQ(summary(c.shared_loads), expected) << broken << " (shared reads at stride " << stride << ")";
    EXPECT_EQ(summary(c.shared_stores), Triple(2, 2, 1)) << broken;
    EXPECT_EQ(c.barriers, 1) << broken;
  }
  // 3 blocks of 20 threads (one warp each, 12 threads short) add into one float: 60 atomics, one
  // request per warp, each in one segment.
  {
    static std::vector<float> total(1, 0.0f);
    total[0] = 0.0f;
    grid::launch({3, 1, 1}, {20, 1, 1}, count_threads, grid::track(total.data(), 1, 1, "total"));
    const auto& c = grid::last_launch();
    EXPECT_EQ(c.buffer("total").atomics.accesses, 60) << broken;
    EXPECT_EQ(summary(c.buffer("total").atomics), Triple(3, 3, 1)) << broken;
    EXPECT_EQ(total[0], 60.0f) << broken;
  }
}

// ---- Your kernels, counted --------------------------------------------------------------------

// (requests, transactions, largest transactions of one request, accesses by single threads) of
// the loads of a, of b, the loads of c and the stores of c; the reads of a's and b's elements
// (fewest, most); shared loads (requests, passes, largest passes of one request).
using MatmulCounts = std::tuple<std::vector<std::int64_t>, std::vector<std::int64_t>, std::vector<std::int64_t>>;

// The launch's counts as plain data (called inside the observation, after the launch).
MatmulCounts plain_counts(const grid::LaunchCounts& c) {
  std::vector<std::int64_t> accesses;
  for (const grid::AccessCounts* x :
       {&c.buffer("a").loads, &c.buffer("b").loads, &c.buffer("c").loads, &c.buffer("c").stores})
    accesses.insert(accesses.end(), {x->requests, x->transactions, x->max_per_request, x->accesses});
  std::vector<std::int64_t> reads;
  for (const char* name : {"a", "b"}) {
    const auto& r = c.buffer(name).reads;
    reads.push_back(*std::min_element(r.begin(), r.end()));
    reads.push_back(*std::max_element(r.begin(), r.end()));
  }
  // The shared loads' requests, passes and most passes of one request, then the barriers passed.
  const std::vector<std::int64_t> shared = {c.shared_loads.requests, c.shared_loads.transactions,
                                            c.shared_loads.max_per_request, c.barriers};
  return {accesses, reads, shared};
}

const char* kernel_name(MatmulKernel kernel) {
  return kernel == MatmulKernel::naive ? "naive" : kernel == MatmulKernel::coalesced ? "coalesced" : "tiled";
}

auto count_matmul(const Size& size, MatmulKernel kernel, std::uint64_t stream) {
  const auto& [n, k, m] = size;
  const Tensor a = random_tensor({n, k}, stream), b = random_tensor({k, m}, stream + 1);
  return observe(fmt::format("the counts of emulate_matmul(a, b, MatmulKernel::{}) for {}", kernel_name(kernel),
                             product(size)),
                 [&] {
                   emulate_matmul(a, b, kernel);
                   return plain_counts(grid::last_launch());
                 });
}

// The fields of MatmulCounts' first vector.
struct Access {
  const char* what;
  std::size_t at;  // index of requests; transactions, max, accesses follow
};
// What a count message quotes for the counts it could not take, because the launch threw (the
// error follows the message): "an unknown number of warp requests", "an unknown number to an
// unknown number of times".
constexpr const char* kUnknownCount = "an unknown number of";
constexpr const char* kUnknownFewest = "an unknown number";

constexpr Access kLoadsA{"loads of a", 0}, kLoadsB{"loads of b", 4}, kLoadsC{"loads of c", 8},
    kStoresC{"stores of c", 12};

TEST(Gpu, Counters) {
  KILN_JUDGE {
    prove_the_counters();
    if (::testing::Test::HasFailure()) return;
  }

  // The naive kernel for (16 × 16) · (16 × 16): one block of 16 × 16 threads, 8 warps. Warp w holds
  // threadIdx.x = 0..15 (rows 0..15) and threadIdx.y = 2w, 2w + 1 (two columns).
  //   a[row·16 + i]: 16 rows, 64 bytes apart, two rows per 128-byte segment: 8 transactions per
  //     request; 16 requests (i = 0..15) per warp: 128 requests, 1024 transactions.
  //   b[i·16 + col]: two neighbouring floats, one segment: 128 requests, 128 transactions.
  //   c[row·16 + col]: 16 rows again, 8 segments: 8 requests, 64 transactions; c is never loaded.
  // Every element of a is read m = 16 times, every element of b n = 16 times.
  {
    const Size size{16, 16, 16};
    const auto observed = count_matmul(size, MatmulKernel::naive, 31);
    if (!KILN_EXPECT_OK(observed, "naive_counts",
                 {{"access", kLoadsA.what}, {"size", product(size)}, {"requests", kUnknownCount},
                  {"transactions", kUnknownCount}, {"expected_requests", "128"}, {"expected_transactions", "1024"}}))
      return;
    KILN_JUDGE {
      const MatmulCounts& counts = *observed;
      const std::vector<std::tuple<Access, std::int64_t, std::int64_t>> expected = {
          {kLoadsA, 128, 1024}, {kLoadsB, 128, 128}, {kLoadsC, 0, 0}, {kStoresC, 8, 64}};
      for (const auto& [access, requests, transactions] : expected) {
        const auto& v = std::get<0>(counts);
        const std::int64_t got_requests = v[access.at], got_transactions = v[access.at + 1];
        if (got_requests != requests || got_transactions != transactions) {
          KILN_FAIL("naive_counts",
                    {{"access", access.what},
                     {"size", product(size)},
                     {"requests", std::to_string(got_requests)},
                     {"transactions", std::to_string(got_transactions)},
                     {"expected_requests", std::to_string(requests)},
                     {"expected_transactions", std::to_string(transactions)}});
          return;
        }
      }
    }
  }
  // At the edges, on sizes that are not multiples of 16: still one load of a and of b per product
  // term, so a's elements are read m times each, b's n times, and c is stored n·m times.
  for (const Size& size : {Size{17, 5, 33}, Size{3, 70, 2}}) {
    const auto observed = count_matmul(size, MatmulKernel::naive, 33);
    if (!KILN_EXPECT_OK(observed, "naive_reads",
                 {{"size", product(size)}, {"reads", fmt::format("a and b {} times", kUnknownCount)},
                  {"expected_a", std::to_string(std::get<2>(size))}, {"expected_b", std::to_string(std::get<0>(size))},
                  {"stores", kUnknownCount}}))
      return;
    KILN_JUDGE {
      const auto& [n, k, m] = size;
      const MatmulCounts& counts = *observed;
      const auto& reads = std::get<1>(counts);
      const std::int64_t stores = std::get<0>(counts)[kStoresC.at + 3];
      if (reads != std::vector<std::int64_t>{m, m, n, n} || stores != n * m) {
        KILN_FAIL("naive_reads", {{"size", product(size)},
                                  {"reads", fmt::format("a {} to {} times, b {} to {} times", reads[0], reads[1],
                                                        reads[2], reads[3])},
                                  {"expected_a", std::to_string(m)},
                                  {"expected_b", std::to_string(n)},
                                  {"stores", std::to_string(stores)}});
        return;
      }
    }
  }
}

// The sizes of the ladder's count checks: one block, not multiples of 16, tall, wide, a single float.
const std::vector<Size> kSizes = {{16, 16, 16}, {17, 5, 33}, {40, 23, 19}, {3, 70, 2}, {33, 31, 64}, {1, 1, 1}};

TEST(Gpu, CoalescedTransactions) {
  // A warp of a 16 × 16 block is two rows of 16 threads. With col from x, its load of a touches two
  // floats (one per row): at most 2 segments; its load of b 16 neighbouring floats, 64 bytes: at
  // most 2 segments (1 when aligned); its store of c two runs of 16 floats: at most 4.
  // Every product term loads a and b once through kiln_load, and every element of c is stored once
  // through kiln_store: n·k·m, n·k·m and n·m counted accesses. (A plain a[i] is not counted.)
  std::uint64_t stream = 41;
  for (const Size& size : kSizes) {
    const auto observed = count_matmul(size, MatmulKernel::coalesced, stream);
    stream += 2;
    if (!KILN_EXPECT_OK(observed, "coalesced_transactions",
                 {{"access", kLoadsA.what}, {"size", product(size)}, {"transactions", kUnknownCount}, {"limit", "2"}}))
      return;
    KILN_JUDGE {
      const MatmulCounts& counts = *observed;
      const auto& [n, k, m] = size;
      const std::vector<std::pair<Access, std::int64_t>> limits = {{kLoadsA, 2}, {kLoadsB, 2}, {kStoresC, 4}};
      const std::vector<std::pair<Access, std::int64_t>> terms = {
          {kLoadsA, n * k * m}, {kLoadsB, n * k * m}, {kStoresC, n * m}};
      for (const auto& [access, expected] : terms) {
        const std::int64_t made = std::get<0>(counts)[access.at + 3];
        if (made != expected) {
          KILN_FAIL("coalesced_uncounted", {{"access", access.what},
                                            {"size", product(size)},
                                            {"accesses", std::to_string(made)},
                                            {"expected", std::to_string(expected)}});
          return;
        }
      }
      for (const auto& [access, limit] : limits) {
        const std::int64_t most = std::get<0>(counts)[access.at + 2];
        if (most > limit) {
          KILN_FAIL("coalesced_transactions", {{"access", access.what},
                                               {"size", product(size)},
                                               {"transactions", std::to_string(most)},
                                               {"limit", std::to_string(limit)}});
          return;
        }
      }
    }
  }
}

TEST(Gpu, TiledReuse) {
  // Block (bx, by) computes c[16·by .. 16·by + 15, 16·bx .. 16·bx + 15] and needs rows 16·by .. of a
  // and columns 16·bx .. of b, each loaded into the tiles once. So every element of a is read once
  // per block column, ⌈m / 16⌉ times, and every element of b once per block row, ⌈n / 16⌉ times.
  // The naive kernel reads them m and n times: the tiles divide global traffic by 16.
  // Shared reads: a warp is rows ty = 2w, 2w + 1. a_tile[ty][i] is two words 16 apart, in two
  // banks; b_tile[i][tx] is 16 neighbouring words, read by both rows (a broadcast). One pass each.
  // Steps: a block walks the inner dimension in ⌈k / 16⌉ steps of two barriers each (a kernel may
  // leave out the last step's second barrier, which guards no later load): for k = 16, one step
  // and 2 barriers per block, where k / 16 + 1 steps would add an empty one past the end.
  std::uint64_t stream = 61;
  for (const Size& size : kSizes) {
    const auto observed = count_matmul(size, MatmulKernel::tiled, stream);
    stream += 2;
    if (!KILN_EXPECT_OK(observed, "tiled_reuse",
                 {{"matrix", "a"}, {"size", product(size)}, {"fewest", kUnknownFewest}, {"most", kUnknownCount},
                  {"expected", std::to_string(blocks(std::get<2>(size)))}}))
      return;
    KILN_JUDGE {
      const auto& [n, k, m] = size;
      const MatmulCounts& counts = *observed;
      const auto& reads = std::get<1>(counts);
      const std::vector<std::tuple<const char*, std::int64_t, std::int64_t, std::int64_t>> matrices = {
          {"a", reads[0], reads[1], blocks(m)}, {"b", reads[2], reads[3], blocks(n)}};
      for (const auto& [matrix, fewest, most, expected] : matrices) {
        if (fewest != expected || most != expected) {
          KILN_FAIL("tiled_reuse", {{"matrix", matrix},
                                    {"size", product(size)},
                                    {"fewest", std::to_string(fewest)},
                                    {"most", std::to_string(most)},
                                    {"expected", std::to_string(expected)}});
          return;
        }
      }
      const auto& shared = std::get<2>(counts);
      if (shared[1] != shared[0]) {
        KILN_FAIL("tiled_bank_conflicts", {{"size", product(size)},
                                           {"requests", std::to_string(shared[0])},
                                           {"passes", std::to_string(shared[1])},
                                           {"ways", std::to_string(shared[2])}});
        return;
      }
      const std::int64_t block_count = blocks(n) * blocks(m), steps = blocks(k), barriers = shared[3];
      if (barriers < block_count * (2 * steps - 1) || barriers > block_count * 2 * steps) {
        KILN_FAIL("tiled_step_count", {{"size", product(size)},
                                       {"barriers", fmt::format("{:.4g}", static_cast<double>(barriers) /
                                                                              static_cast<double>(block_count))},
                                       {"k", std::to_string(k)},
                                       {"steps", std::to_string(steps)},
                                       {"expected", std::to_string(2 * steps)}});
        return;
      }
    }
  }
}

}  // namespace
}  // namespace kiln
