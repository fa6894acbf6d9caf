// The challenge's register-blocked kernels (kiln/gpu.h) on a CUDA device, compared with plain loops
// in double. Where there is no device this check is skipped, saying why; the emulator checks
// (tests/gpu_blocktile_test.cpp) run the same kernels everywhere.
#include <string>

#include "device_products.h"
#include "kiln/gpu_device.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

TEST(GpuDevice, BlocktileMatmul) {
  if (const std::string why = device_testing::device_unavailable(); !why.empty()) GTEST_SKIP() << why;
  // Below one 64 × 64 tile, past it, not multiples of 8 inside, and many blocks at once.
  device_testing::check_device_products(
      {{MatmulKernel::blocktile_1d, "blocktile_1d"}, {MatmulKernel::blocktile_2d, "blocktile_2d"}},
      {{1, 1, 1}, {33, 31, 65}, {70, 45, 37}, {200, 130, 190}, {256, 64, 320}}, 101, "device_blocktile_out_of_bounds",
      "device_blocktile_differs");
}

}  // namespace
}  // namespace kiln
