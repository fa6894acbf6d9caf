// The kernels of kiln/gpu.h on a CUDA device, compared with plain loops in double. Where there is
// no device these checks are skipped, saying why; the emulator checks (tests/gpu_test.cpp) run
// the same kernels everywhere.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/gpu_device.h"
#include "kiln/testing.h"

namespace {

using kiln::MatmulKernel;
using kiln::Tensor;
using kiln::testing::compare;
using kiln::testing::format_number;
using kiln::testing::random_tensor;
using kiln::testing::reference_matmul;

#define KILN_REQUIRE_DEVICE()                                                           \
  do {                                                                                  \
    if (const std::string why = kiln::device::unavailable_reason(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

TEST(GpuDevice, Matmul) {
  KILN_REQUIRE_DEVICE();
  // Below, at and past one 16 × 16 block, not square, and large enough for many blocks at once.
  const std::vector<std::tuple<int, int, int>> sizes = {{1, 1, 1},    {16, 16, 16}, {17, 5, 33},
                                                        {40, 23, 19}, {3, 70, 2},   {200, 130, 190}};
  const std::pair<MatmulKernel, const char*> kernels[] = {
      {MatmulKernel::naive, "naive"}, {MatmulKernel::coalesced, "coalesced"}, {MatmulKernel::tiled, "tiled"}};
  for (const auto& [kernel, name] : kernels) {
    std::uint64_t seed = 21;
    for (const auto& [n, k, m] : sizes) {
      const Tensor a = random_tensor({n, k}, seed++), b = random_tensor({k, m}, seed++);
      const std::string shapes = "(" + std::to_string(n) + " × " + std::to_string(k) + ") · (" + std::to_string(k) +
                                 " × " + std::to_string(m) + ")";
      kiln::device::Matmul product(a.to_vector(), b.to_vector(), n, k, m);
      std::vector<float> c;
      try {
        product.run(kernel);
        c = product.result();
      } catch (const std::out_of_range& error) {
        KILN_FAIL("device_writes_out_of_bounds", {{"kernel", name}}, shapes + ": " + error.what());
        return;
      }
      const auto comparison = compare(Tensor({n, m}, c), reference_matmul(a, b), 1e-4);
      if (!comparison.close) {
        KILN_FAIL("device_matmul_differs", {{"kernel", name}, {"difference", format_number(comparison.max_abs_diff)}},
                  shapes + ": " + comparison.describe());
        return;
      }
    }
  }
}

TEST(GpuDevice, Embedding) {
  KILN_REQUIRE_DEVICE();
  // dim is not a multiple of 16, and count not a multiple of 16 either, so threads past both edges exist.
  const int rows = 10, dim = 20, count = 4094;
  // Neighbouring ids are equal in pairs: rows i and i + 1 of g share a warp (16 threads wide, two
  // rows of the block), so without atomics two threads add into one element at the same instant.
  std::vector<std::int64_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back((i / 2 * 7) % rows);
  const Tensor w = random_tensor({rows, dim}, 5), g = random_tensor({count, dim}, 6);
  kiln::device::Embedding embedding(w.to_vector(), rows, dim, ids, g.to_vector());

  std::vector<float> gathered_values, grad_values;
  try {
    embedding.gather();
    gathered_values = embedding.gathered();
    embedding.scatter_add();
    grad_values = embedding.grad_w();
  } catch (const std::out_of_range& error) {
    KILN_FAIL("device_embedding_out_of_bounds", {}, error.what());
    return;
  }

  std::vector<float> expected;
  const std::vector<float> table = w.to_vector();
  for (std::int64_t id : ids)
    for (int j = 0; j < dim; ++j) expected.push_back(table[id * dim + j]);
  const auto gathered = compare(Tensor({count, dim}, gathered_values), Tensor({count, dim}, expected), 0.0);
  if (!gathered.close) {
    KILN_FAIL("device_gather_differs", {{"difference", format_number(gathered.max_abs_diff)}}, gathered.describe());
    return;
  }

  const std::vector<float> gv = g.to_vector();
  std::vector<double> sums(std::size_t(rows) * dim, 0.0);
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < dim; ++j) sums[ids[i] * dim + j] += gv[std::size_t(i) * dim + j];
  // Each element sums about 410 values in float, in whatever order the threads arrive.
  const auto scattered = compare(Tensor({rows, dim}, grad_values),
                                 Tensor({rows, dim}, std::vector<float>(sums.begin(), sums.end())), 1e-3);
  if (!scattered.close) {
    KILN_FAIL("device_scatter_lost_updates", {{"difference", format_number(scattered.max_abs_diff)}},
              scattered.describe());
  }
}

}  // namespace
