// The kernels of kiln/gpu.h on a CUDA device, compared with plain loops in double. Where there is
// no device these checks are skipped, saying why; the emulator checks (tests/gpu_test.cpp) run
// the same kernels everywhere.
//
// Whether a device is there is itself observed: the judge that decides may run where the device
// is not, and must skip exactly when the run it judges skipped.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "device_products.h"
#include "kiln/gpu_device.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::reference_matmul;
using testing::TensorData;

using device_testing::device_unavailable;

#define KILN_REQUIRE_DEVICE()                                                  \
  do {                                                                         \
    if (const std::string why = device_unavailable(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

TEST(GpuDevice, Matmul) {
  KILN_REQUIRE_DEVICE();
  // Below, at and past one 16 × 16 block, not square, and large enough for many blocks at once.
  device_testing::check_device_products(
      {{MatmulKernel::naive, "naive"}, {MatmulKernel::coalesced, "coalesced"}, {MatmulKernel::tiled, "tiled"}},
      {{1, 1, 1}, {16, 16, 16}, {17, 5, 33}, {40, 23, 19}, {3, 70, 2}, {200, 130, 190}}, 21,
      "device_writes_out_of_bounds", "device_matmul_differs");
}

TEST(GpuDevice, Embedding) {
  KILN_REQUIRE_DEVICE();
  // dim is not a multiple of 16, and count not a multiple of 16 either, so threads past both edges exist.
  const int rows = 10, dim = 20, count = 4094;
  // Neighbouring ids are equal in pairs: rows i and i + 1 of g share a warp (16 threads wide, two
  // rows of the block), so without atomics two threads add into one element at the same instant.
  const std::vector<std::int64_t> pair_ids = random_ints(count / 2, rows, 5);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back(pair_ids[static_cast<std::size_t>(i / 2)]);
  const TensorData w = data_of(random_tensor({rows, dim}, 6)), g = data_of(random_tensor({count, dim}, 7));

  const auto gathered = observe("the embedding gather on the device of 4094 ids into a (10, 20) table", [&] {
    device::Embedding embedding(w.values, rows, dim, ids);
    embedding.gather();
    return embedding.gathered();
  });
  if (!gathered.ok() && gathered.error().is("std::out_of_range")) {
    KILN_FAIL("device_embedding_out_of_bounds", {}, gathered.describe_error());
    return;
  }
  if (!KILN_EXPECT_OK(gathered, "device_gather_differs")) return;
  KILN_JUDGE {
    std::vector<float> expected;
    for (std::int64_t id : ids)
      for (int j = 0; j < dim; ++j) expected.push_back(w.values[static_cast<std::size_t>(id * dim + j)]);
    const testing::Comparison gather = compare(data_of({count, dim}, *gathered), data_of({count, dim}, expected), 0.0);
    if (!gather.close) {
      KILN_FAIL("device_gather_differs", {{"difference", testing::format_number(gather.max_abs_diff)}},
                gathered.call() + (gather.shapes_match ? ": " + gather.describe()
                                                       : fmt::format(" gave {} values", gathered->size())));
      return;
    }
  }

  const auto scattered = observe("the embedding scatter-add on the device of 4094 ids into a (10, 20) table", [&] {
    device::Embedding embedding(w.values, rows, dim, ids, g.values);
    embedding.scatter_add();
    return embedding.grad_w();
  });
  if (!scattered.ok() && scattered.error().is("std::out_of_range")) {
    KILN_FAIL("device_embedding_out_of_bounds", {}, scattered.describe_error());
    return;
  }
  if (!KILN_EXPECT_OK(scattered, "device_scatter_lost_updates")) return;
  KILN_JUDGE {
    std::vector<double> sums(std::size_t(rows) * dim, 0.0);
    for (int i = 0; i < count; ++i)
      for (int j = 0; j < dim; ++j)
        sums[static_cast<std::size_t>(ids[static_cast<std::size_t>(i)] * dim + j)] +=
            g.values[std::size_t(i) * dim + j];
    // Each element sums about 410 values in float, in whatever order the threads arrive.
    const testing::Comparison scatter = compare(data_of({rows, dim}, *scattered),
                                                data_of({rows, dim}, std::vector<float>(sums.begin(), sums.end())), 1e-3);
    if (!scatter.close) {
      KILN_FAIL("device_scatter_lost_updates", {{"difference", testing::format_number(scatter.max_abs_diff)}},
                scattered.call() + (scatter.shapes_match ? ": " + scatter.describe()
                                                         : fmt::format(" gave {} values", scattered->size())));
    }
  }
}

}  // namespace
}  // namespace kiln
