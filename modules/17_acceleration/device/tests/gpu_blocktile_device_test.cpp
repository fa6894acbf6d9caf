// The challenge's register-blocked kernels (kiln/gpu.h) on a CUDA device, compared with plain loops
// in double. Where there is no device this check is skipped, saying why; the emulator checks
// (tests/gpu_blocktile_test.cpp) run the same kernels everywhere.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/gpu_device.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::reference_matmul;

TEST(GpuDevice, BlocktileMatmul) {
  // Whether a device is there is itself observed, so that the judge skips exactly when the run did.
  const auto why = observe("kiln::device::unavailable_reason()", [] { return device::unavailable_reason(); });
  if (!why.ok()) GTEST_SKIP() << "no CUDA device: " << why.describe_error();
  if (!why->empty()) GTEST_SKIP() << *why;
  // Below one 64 × 64 tile, past it, not multiples of 8 inside, and many blocks at once.
  const std::vector<std::tuple<int, int, int>> sizes = {
      {1, 1, 1}, {33, 31, 65}, {70, 45, 37}, {200, 130, 190}, {256, 64, 320}};
  const std::pair<MatmulKernel, const char*> kernels[] = {{MatmulKernel::blocktile_1d, "blocktile_1d"},
                                                          {MatmulKernel::blocktile_2d, "blocktile_2d"}};
  for (const auto& [kernel, name] : kernels) {
    std::uint64_t stream = 101;
    for (const auto& [n, k, m] : sizes) {
      const Tensor a = random_tensor({n, k}, stream++), b = random_tensor({k, m}, stream++);
      const std::vector<float> a_values = data_of(a).values, b_values = data_of(b).values;
      const auto c = observe(fmt::format("the {} kernel on the device for ({} × {}) · ({} × {})", name, n, k, k, m), [&] {
        device::Matmul product(a_values, b_values, n, k, m);
        product.run(kernel);
        return product.result();
      });
      if (!c.ok() && c.error().is("std::out_of_range")) {
        KILN_FAIL("device_blocktile_out_of_bounds", {{"kernel", name}}, c.describe_error());
        return;
      }
      if (!KILN_EXPECT_OK(c, "device_blocktile_differs", {{"kernel", name}, {"difference", "-"}})) return;
      const testing::Comparison comparison = compare(data_of({n, m}, *c), reference_matmul(a, b), 1e-4);
      if (!comparison.close) {
        KILN_FAIL("device_blocktile_differs",
                  {{"kernel", name}, {"difference", testing::format_number(comparison.max_abs_diff)}},
                  c.call() + (comparison.shapes_match ? ": " + comparison.describe()
                                                      : fmt::format(" gave {} values, expected {}", c->size(), n * m)));
        return;
      }
    }
  }
}

}  // namespace
}  // namespace kiln
