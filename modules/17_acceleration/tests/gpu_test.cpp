// The GPU kernels of kiln/gpu.h, run on the CPU emulator and compared with plain loops in double.
// Inputs are drawn from the run's seed; sizes are not square and not multiples of the 16 × 16 block.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/gpu.h"
#include "kiln/testing.h"
#include "matmul_counts.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::reference_matmul;
using testing::TensorData;

// Sizes below, at and past one 16 × 16 block, and shapes that are not square. The launchers
// throw std::out_of_range when a kernel wrote past the end of c; that is out_of_bounds. They
// throw kiln::IndexError when a thread touched any other element outside the tensors (a load
// past the edge); that is outside, asked first, since an IndexError is a std::out_of_range too.
// Any other error or a wrong number is differs, unless every output leaves out the products of
// the same inner values: that is inner_missing, where the kernel has one (its inner loop is tiled).
void check_matmul(MatmulKernel kernel, const char* name, const char* differs, const char* out_of_bounds,
                  const char* outside, const char* inner_missing = nullptr) {
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> sizes = {
      {1, 1, 1}, {16, 16, 16}, {17, 5, 33}, {40, 23, 19}, {3, 70, 2}};
  std::uint64_t stream = 11;
  for (const auto& [n, k, m] : sizes) {
    const Tensor a = random_tensor({n, k}, stream++), b = random_tensor({k, m}, stream++);
    const auto c = observe(fmt::format("emulate_matmul(a, b, MatmulKernel::{}) of ({} × {}) · ({} × {})", name, n, k, k, m),
                           [&] { return emulate_matmul(a, b, kernel); });
    KILN_JUDGE {
      const std::string size = fmt::format("({} × {}) · ({} × {})", n, k, k, m);
      if (!c.ok() && c.error().is("kiln::IndexError")) {
        KILN_FAIL(outside, {{"size", size}}, c.describe_error());
        return;
      }
      if (!c.ok() && c.error().is("std::out_of_range")) {
        KILN_FAIL(out_of_bounds, {{"size", size}}, c.describe_error());
        return;
      }
      const testing::Comparison compared =
          c.ok() ? testing::compare(*c, reference_matmul(a, b), 1e-4, 1e-5) : testing::Comparison{};
      if (inner_missing && c.ok() && !compared.close) {
        const std::vector<std::int64_t> counts = matmul_counts::inner_counts(data_of(a), data_of(b), *c);
        const bool none_twice = !counts.empty() && std::all_of(counts.begin(), counts.end(), [](std::int64_t count) {
          return count == 0 || count == 1;
        });
        const std::string missing = none_twice ? matmul_counts::values_counted(counts, 0) : "";
        if (!missing.empty()) {
          KILN_FAIL(inner_missing, {{"size", size}, {"values", missing}, {"last", std::to_string(k - 1)}},
                    c.call() + ": " + compared.describe());
          return;
        }
      }
    }
    if (!KILN_EXPECT_CLOSE(c, reference_matmul(a, b), 1e-4, differs)) return;
  }
}

TEST(Gpu, NaiveMatmul) {
  check_matmul(MatmulKernel::naive, "naive", "naive_kernel_differs", "kernel_writes_out_of_bounds",
               "naive_touches_outside");
}

TEST(Gpu, CoalescedMatmul) {
  check_matmul(MatmulKernel::coalesced, "coalesced", "coalesced_kernel_differs", "coalesced_writes_out_of_bounds",
               "coalesced_touches_outside");
}

TEST(Gpu, TiledMatmul) {
  check_matmul(MatmulKernel::tiled, "tiled", "tiled_kernel_differs", "tiled_writes_out_of_bounds",
               "tiled_touches_outside", "tiled_inner_values_missing");
}

TEST(Gpu, Embedding) {
  // dim is not a multiple of 16, nor is the count of ids; 37 ids into 10 rows repeat many times,
  // and the last two are the table's last row and its first.
  const std::int64_t rows = 10, dim = 20;
  std::vector<std::int64_t> ids = random_ints(35, rows, 5);
  ids.push_back(rows - 1);
  ids.push_back(0);
  const Tensor w = random_tensor({rows, dim}, 6);
  const auto gathered = observe("emulate_embedding_gather(w, ids) of 37 ids into a (10, 20) table",
                                 [&] { return emulate_embedding_gather(w, ids); });
  KILN_JUDGE {
    if (!gathered.ok() && gathered.error().is("kiln::IndexError")) {
      KILN_FAIL("embedding_touches_outside", {{"kernel", "gather"}}, gathered.describe_error());
      return;
    }
    const TensorData table = data_of(w);
    std::vector<float> expected;
    for (std::int64_t id : ids)
      for (std::int64_t j = 0; j < dim; ++j) expected.push_back(table.values[static_cast<std::size_t>(id * dim + j)]);
    KILN_EXPECT_CLOSE(gathered, data_of({std::int64_t(ids.size()), dim}, expected), 0.0, "gather_differs");
  }

  const Tensor g = random_tensor({std::int64_t(ids.size()), dim}, 7);
  const auto scattered = observe("emulate_embedding_scatter_add(g, ids, 10) of 37 ids into a (10, 20) table",
                                 [&] { return emulate_embedding_scatter_add(g, ids, rows); });
  KILN_JUDGE {
    if (!scattered.ok() && scattered.error().is("kiln::IndexError")) {
      KILN_FAIL("embedding_touches_outside", {{"kernel", "scatter-add"}}, scattered.describe_error());
      return;
    }
    const TensorData gd = data_of(g);
    std::vector<double> sums(static_cast<std::size_t>(rows * dim), 0.0);
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (std::int64_t j = 0; j < dim; ++j)
        sums[static_cast<std::size_t>(ids[i] * dim + j)] += gd.values[i * static_cast<std::size_t>(dim) + j];
    if (!KILN_EXPECT_CLOSE(scattered, data_of({rows, dim}, std::vector<float>(sums.begin(), sums.end())), 1e-5,
                           "scatter_differs"))
      return;
  }
  // The emulator runs one thread at a time, so a plain load-add-store gives the right sums here;
  // on a GPU the threads of a repeated id race and lose updates. Its counts tell: every one of the
  // 37 · 20 additions into grad_w must be a kiln_atomic_add, and none a plain store.
  const auto counts = observe("the counts of emulate_embedding_scatter_add(g, ids, 10) of 37 ids into a (10, 20) table",
                              [&] {
                                emulate_embedding_scatter_add(g, ids, rows);
                                const grid::BufferCounts& grad_w = grid::last_launch().buffer("grad_w");
                                return std::vector<std::int64_t>{grad_w.stores.accesses, grad_w.atomics.accesses};
                              });
  const std::int64_t additions = std::int64_t(ids.size()) * dim;
  if (!KILN_EXPECT_OK(counts, "scatter_not_atomic",
                      {{"atomics", "an unknown number"},
                       {"additions", std::to_string(additions)},
                       {"stores", "an unknown number of"}}))
    return;
  KILN_JUDGE {
    const std::int64_t stores = (*counts)[0], atomics = (*counts)[1];
    KILN_EXPECT(stores == 0 && atomics == additions, "scatter_not_atomic",
                {{"atomics", std::to_string(atomics)},
                 {"additions", std::to_string(additions)},
                 {"stores", std::to_string(stores)}},
                fmt::format("{}: {} and {} kiln_atomic_add into grad_w, expected 0 and {} (one atomic "
                            "addition per element of g)",
                            counts.call(), testing::counted(stores, "plain store"), atomics,
                            additions));
  }
}

}  // namespace
}  // namespace kiln
