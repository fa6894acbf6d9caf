// The speed-graded checks (kiln/testing.h, speed checks): tiled_matmul and fused_gelu, each right
// on fresh inputs, on the same tensors after their values changed and on new tensors, then timed
// by the grader beside the reference's kernel on inputs no program has seen. The judges here are
// trusted double-precision loops.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::hashed_random_tensor;
using testing::random_tensor;
using testing::SpeedKernel;
using testing::TensorData;

// The timed product, not a multiple of the default 64 × 64 tile in any direction, and the smaller
// one the three observed calls use (they run with the sanitizers, and are judged twice).
constexpr std::int64_t kRows = 400, kInner = 333, kCols = 417;
constexpr std::int64_t kCheckRows = 67, kCheckInner = 45, kCheckCols = 83;

// Every element of the product, in double: what differs by more than float32 rounding allows.
// The allowance is relative to Σ|a_ip·b_pj|, which bounds the rounding of any order of summing.
// The judge runs on every timed call's result, and GCC vectorizes its inner loop only at -O3
// (3× faster than at the -O2 that builds the timed programs): this function alone asks for it.
#pragma GCC push_options
#pragma GCC optimize("O3")
std::string judge_matmul(const std::vector<Tensor>& inputs, const TensorData& c) {
  const std::int64_t rows = inputs[0].shape()[0], inner = inputs[0].shape()[1], cols = inputs[1].shape()[1];
  const std::string of = fmt::format("for ({} × {}) · ({} × {})", rows, inner, inner, cols);
  if (c.shape != Shape{rows, cols}) return of + ": the result has shape " + to_string(c.shape);
  const std::vector<float> a = inputs[0].to_vector(), b = inputs[1].to_vector();
  std::vector<double> sum(static_cast<std::size_t>(cols)), size(static_cast<std::size_t>(cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(size.begin(), size.end(), 0.0);
    for (std::int64_t p = 0; p < inner; ++p) {
      const double aip = a[static_cast<std::size_t>(i * inner + p)];
      const float* row = b.data() + p * cols;
      for (std::int64_t j = 0; j < cols; ++j) {
        sum[static_cast<std::size_t>(j)] += aip * row[j];
        size[static_cast<std::size_t>(j)] += std::fabs(aip * row[j]);
      }
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      const double got = c.values[static_cast<std::size_t>(i * cols + j)];
      const double want = sum[static_cast<std::size_t>(j)];
      if (!(std::fabs(got - want) <= 1e-5 * size[static_cast<std::size_t>(j)] + 1e-6))
        return fmt::format("{}: element [{}, {}] is {:.7g} where the product is {:.7g}", of, i, j, got, want);
    }
  }
  return "";
}
#pragma GCC pop_options

TEST(AccelerationSpeed, TiledMatmul) {
  SpeedKernel kernel;
  kernel.name = "tiled_matmul(a, b)";
  kernel.inputs = [](std::uint64_t stream) {
    return std::vector<Tensor>{hashed_random_tensor({kRows, kInner}, stream),
                               hashed_random_tensor({kInner, kCols}, stream + 7)};
  };
  kernel.check_inputs = [](std::uint64_t stream) {
    return std::vector<Tensor>{random_tensor({kCheckRows, kCheckInner}, stream),
                               random_tensor({kCheckInner, kCheckCols}, stream + 7)};
  };
  kernel.call = [](const std::vector<Tensor>& in) { return tiled_matmul(in[0], in[1]); };
  kernel.judge = KILN_JUDGE_ONLY(judge_matmul);
  KILN_SPEED_CHECK(kernel, "tiled_speed_wrong");
}

// The timed count, one more than 2^20 so that no vector width divides it, and the observed calls'.
constexpr std::int64_t kGeluCount = (1 << 20) + 3;
constexpr std::int64_t kCheckGeluCount = 4099;

std::string judge_gelu(const std::vector<Tensor>& inputs, const TensorData& y) {
  const std::vector<float> x = inputs[0].to_vector();
  const std::string of = fmt::format("for {} values", x.size());
  if (y.shape != inputs[0].shape()) return of + ": the result has shape " + to_string(y.shape);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    // 0.5·v·(1 + tanh(u)) written as v / (1 + e^(-2u)): the same value to 1e-15, in a third of
    // the time (the judge runs on every value of every timed call).
    const double u = std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v);
    const double want = v / (1.0 + std::exp(-2.0 * u));
    if (!(std::fabs(y.values[i] - want) <= 1e-5))
      return fmt::format("{}: element {} is {:.7g} where GELU({:.7g}) is {:.7g}", of, i, y.values[i], v, want);
  }
  return "";
}

TEST(AccelerationSpeed, FusedGelu) {
  SpeedKernel kernel;
  kernel.name = "fused_gelu(x)";
  kernel.inputs = [](std::uint64_t stream) {
    return std::vector<Tensor>{hashed_random_tensor({kGeluCount}, stream, -5.0f, 5.0f)};
  };
  kernel.check_inputs = [](std::uint64_t stream) {
    return std::vector<Tensor>{random_tensor({kCheckGeluCount}, stream, -5.0f, 5.0f)};
  };
  kernel.call = [](const std::vector<Tensor>& in) { return fused_gelu(in[0]); };
  kernel.judge = KILN_JUDGE_ONLY(judge_gelu);
  KILN_SPEED_CHECK(kernel, "gelu_speed_wrong");
}

}  // namespace
}  // namespace kiln
