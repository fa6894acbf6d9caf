// The GPU kernels of kiln/gpu.h, run on the CPU emulator and compared with plain loops in double.
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kiln/gpu.h"
#include "kiln/testing.h"

namespace {

using kiln::MatmulKernel;
using kiln::Tensor;
using kiln::testing::random_tensor;
using kiln::testing::reference_matmul;

// Sizes below, at and past one 16 × 16 block, and shapes that are not square.
void check_matmul(MatmulKernel kernel, const char* differs, const char* out_of_bounds) {
  const std::vector<std::tuple<int, int, int>> sizes = {{1, 1, 1}, {16, 16, 16}, {17, 5, 33}, {40, 23, 19}, {3, 70, 2}};
  std::uint64_t seed = 11;
  for (const auto& [n, k, m] : sizes) {
    const Tensor a = random_tensor({n, k}, seed++), b = random_tensor({k, m}, seed++);
    Tensor c;
    try {
      c = kiln::emulate_matmul(a, b, kernel);
    } catch (const kiln::NotImplemented&) {
      throw;
    } catch (const std::out_of_range& error) {
      KILN_FAIL(out_of_bounds, {{"difference", "-"}, {"where", "-"}},
                "(" + std::to_string(n) + " × " + std::to_string(k) + ") · (" + std::to_string(k) + " × " +
                    std::to_string(m) + "): " + error.what());
      return;
    }
    if (!KILN_EXPECT_CLOSE(c, reference_matmul(a, b), 1e-4, differs)) return;
  }
}

TEST(Gpu, NaiveMatmul) { check_matmul(MatmulKernel::naive, "naive_kernel_differs", "kernel_writes_out_of_bounds"); }

TEST(Gpu, CoalescedMatmul) {
  check_matmul(MatmulKernel::coalesced, "coalesced_kernel_differs", "coalesced_kernel_differs");
}

TEST(Gpu, TiledMatmul) { check_matmul(MatmulKernel::tiled, "tiled_kernel_differs", "tiled_kernel_differs"); }

TEST(Gpu, Embedding) {
  const std::int64_t rows = 10, dim = 20;  // dim is not a multiple of 16
  const Tensor w = random_tensor({rows, dim}, 5);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 37; ++i) ids.push_back((i * 7) % rows == 4 ? 3 : (i * 7) % rows);  // row 3 repeats often
  const Tensor gathered = kiln::emulate_embedding_gather(w, ids);
  std::vector<float> expected;
  const std::vector<float> table = w.to_vector();
  for (std::int64_t id : ids)
    for (std::int64_t j = 0; j < dim; ++j) expected.push_back(table[id * dim + j]);
  KILN_EXPECT_CLOSE(gathered, Tensor({std::int64_t(ids.size()), dim}, expected), 0.0, "gather_differs");

  const Tensor g = random_tensor({std::int64_t(ids.size()), dim}, 6);
  const std::vector<float> gv = g.to_vector();
  std::vector<double> sums(static_cast<std::size_t>(rows * dim), 0.0);
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::int64_t j = 0; j < dim; ++j) sums[ids[i] * dim + j] += gv[i * dim + j];
  const Tensor scattered = kiln::emulate_embedding_scatter_add(g, ids, rows);
  KILN_EXPECT_CLOSE(scattered, Tensor({rows, dim}, std::vector<float>(sums.begin(), sums.end())), 1e-5,
                    "scatter_differs");
}

}  // namespace
