// Given: the kernels that `grader bench 17` times, in three groups. In each group a given naive
// version sets the floor, your kernels are measured against it, and for the matrix product Eigen
// sets the ceiling:
//
//   matmul 512x512                three_loops (i-j-k, given here), matmul_ikj (module 01's given
//                                 matmul), tiled_matmul, blocked_matmul (the challenge),
//                                 vectorized_matmul (Eigen, given)
//   gelu 4M                       unfused_gelu (given), fused_gelu
//   conv N=8 C=64->64 32x32 k=3   conv2d_direct (your module 09 Conv2d), im2col_conv2d
//
// and, for `grader bench 17 --emulator`, the GPU ladder counted on the emulator (emulator.cpp).
//
// Every kernel's result is checked against a reference computed once by trusted code (Eigen for
// the product, double-precision loops written here for GELU and the convolution) before it is
// timed; a wrong result is reported and not timed. A kernel you have not written yet throws
// kiln::NotImplemented, which the bench reports as not written.
//
// The counts given for each kernel:
//   flops        arithmetic per call: 2·n³ for an n × n product; see each group for the others
//   bytes        what must move at least once: the inputs read and the output written
//   extra_bytes  temporary memory a call allocates beyond its inputs and output
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kiln/acceleration.h"
#include "kiln/bench.h"
#include "kiln/conv.h"
#include "kiln/tensor.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln::bench::Role;

// Values uniform in [low, high), row-major with `shape`. std::mt19937 rather than the course's
// generator, so that the bench does not depend on your module 01 for its inputs.
Tensor uniform(const Shape& shape, float low, float high, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(static_cast<std::size_t>(kiln::numel(shape)));
  for (float& value : values) value = distribution(engine);
  return Tensor(shape, std::move(values));
}

// A reference result, computed on first use and then kept, so that registering costs nothing
// and a group that is filtered out never computes its reference.
class Reference {
 public:
  explicit Reference(std::function<Tensor()> compute) : compute_(std::move(compute)) {}
  const Tensor& get() {
    if (!value_) value_ = compute_();
    return *value_;
  }

 private:
  std::function<Tensor()> compute_;
  std::optional<Tensor> value_;
};

// "" when actual equals expected to within `tolerance` relative to 1 + |expected|, else what
// differs.
std::string check(const Tensor& actual, const Tensor& expected, double tolerance) {
  if (actual.shape() != expected.shape()) {
    return "shape " + kiln::to_string(actual.shape()) + ", expected " + kiln::to_string(expected.shape());
  }
  const Tensor actual_rows = actual.contiguous();
  const Tensor expected_rows = expected.contiguous();
  return kiln::bench::compare(actual_rows.data(), expected_rows.data(),
                              static_cast<std::size_t>(expected_rows.numel()), tolerance);
}

struct Counts {
  double flops = 0;
  double bytes = 0;
  double extra_bytes = 0;
};

// Registers one kernel: run() computes and keeps the result, validate() checks it against the
// group's reference. NotImplemented is left to propagate from run(): the bench main reports it.
void add_kernel(const std::string& group, const std::string& name, Role role, Counts counts,
                std::function<Tensor()> compute, std::shared_ptr<Reference> reference, double tolerance) {
  auto result = std::make_shared<Tensor>();
  kiln::bench::Kernel kernel;
  kernel.group = group;
  kernel.name = name;
  kernel.role = role;
  kernel.flops = counts.flops;
  kernel.bytes = counts.bytes;
  kernel.extra_bytes = counts.extra_bytes;
  kernel.run = [result, compute = std::move(compute)] { *result = compute(); };
  kernel.validate = [result, reference = std::move(reference), tolerance] {
    return check(*result, reference->get(), tolerance);
  };
  kiln::bench::add(std::move(kernel));
}

// ---------------------------------------------------------------------------------------------
// Matrix multiply

// The textbook product, c[i, j] = Σ_k a[i, k]·b[k, j], with k innermost: every step of the inner
// loop reads b one row further down, n floats away, so almost every read of b misses the cache.
Tensor three_loops(const Tensor& a, const Tensor& b) {
  const std::int64_t n = a.shape()[0];
  const std::int64_t inner = a.shape()[1];
  const std::int64_t m = b.shape()[1];
  // Layouts (row-major): a is (n, inner), b is (inner, m), c is (n, m).
  const float* a_data = a.data();
  const float* b_data = b.data();
  Tensor c = Tensor::zeros({n, m});
  float* c_data = c.data();
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      float total = 0.0f;
      for (std::int64_t k = 0; k < inner; ++k) total += a_data[i * inner + k] * b_data[k * m + j];
      c_data[i * m + j] = total;
    }
  }
  return c;
}

void register_matmul() {
  const std::int64_t n = 512;
  const std::string group = "matmul 512x512";
  const Tensor a = uniform({n, n}, -1.0f, 1.0f, 1701);
  const Tensor b = uniform({n, n}, -1.0f, 1.0f, 1702);
  // 2·n³ flops; a and b read and c written once: 3·n² floats.
  const Counts counts{2.0 * n * n * n, 3.0 * n * n * 4, 0};
  auto reference = std::make_shared<Reference>([a, b] { return kiln::vectorized_matmul(a, b); });
  // Sums of 512 products in float, in different orders: relative differences near 1e-6.
  const double tolerance = 1e-4;
  add_kernel(group, "three_loops", Role::naive, counts, [a, b] { return three_loops(a, b); }, reference,
             tolerance);
  // Module 01's given matmul: the same three loops in i-k-j order, so the inner loop runs along
  // rows of b and c. Loop order alone, no tiling.
  add_kernel(group, "matmul_ikj", Role::kernel, counts, [a, b] { return kiln::matmul(a, b); },
             reference, tolerance);
  add_kernel(group, "tiled_matmul", Role::kernel, counts, [a, b] { return kiln::tiled_matmul(a, b); }, reference,
             tolerance);
  add_kernel(group, "blocked_matmul", Role::kernel, counts, [a, b] { return kiln::blocked_matmul(a, b); },
             reference, tolerance);
  add_kernel(group, "vectorized_matmul", Role::library, counts,
             [a, b] { return kiln::vectorized_matmul(a, b); }, reference, tolerance);
}

// ---------------------------------------------------------------------------------------------
// GELU

void register_gelu() {
  const std::int64_t count = std::int64_t{4} << 20;
  const std::string group = "gelu 4M";
  const Tensor x = uniform({count}, -4.0f, 4.0f, 1703);
  // Flops per element, as src/gelu_given.cpp writes GELU: the twelve multiplies, adds and the one
  // division around the exponential (x·x, ·x, ·0.044715, + x, ·√(2/π), ·2, + 1, 2/…, 1 − …, + 1,
  // 0.5·x, the last product), and the exponential itself counted as 15 operations, about what a
  // vectorised exp costs (a range reduction and a polynomial). 27 in all: a few FLOP/byte.
  // Bytes: x read and the result written once, 4 bytes each.
  const double flops = 27.0 * static_cast<double>(count);
  const double bytes = 2.0 * 4.0 * static_cast<double>(count);
  // unfused_gelu allocates 12 temporaries the size of x (see src/gelu_given.cpp) besides its result.
  const double temporaries = 12.0 * 4.0 * static_cast<double>(count);
  auto reference = std::make_shared<Reference>([x] {
    const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
    std::vector<float> values = x.to_vector();
    for (float& value : values) {
      const double v = value;
      value = static_cast<float>(0.5 * v * (1.0 + std::tanh(sqrt_2_over_pi * (v + 0.044715 * v * v * v))));
    }
    return Tensor(x.shape(), std::move(values));
  });
  // float against double: a few units in the last place of values up to 4.
  const double tolerance = 1e-5;
  add_kernel(group, "unfused_gelu", Role::naive, {flops, bytes, temporaries}, [x] { return kiln::unfused_gelu(x); },
             reference, tolerance);
  add_kernel(group, "fused_gelu", Role::kernel, {flops, bytes, 0}, [x] { return kiln::fused_gelu(x); }, reference,
             tolerance);
}

// ---------------------------------------------------------------------------------------------
// Convolution

// The reference convolution: direct loops in double, ow innermost so that they run quickly
// enough to compute once. x (N, C, H, W), weight (out_ch, C, k, k), bias (out_ch), stride 1.
Tensor reference_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int padding) {
  const std::int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const std::int64_t out_channels = weight.shape()[0], k = weight.shape()[2];
  const std::int64_t out_h = height + 2 * padding - k + 1;
  const std::int64_t out_w = width + 2 * padding - k + 1;
  const float* x_data = x.data();
  const float* w_data = weight.data();
  const float* b_data = bias.data();
  // out (N, out_ch, out_h, out_w); one output plane at a time, summed in double.
  std::vector<float> out(static_cast<std::size_t>(batch * out_channels * out_h * out_w));
  std::vector<double> plane(static_cast<std::size_t>(out_h * out_w));
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t oc = 0; oc < out_channels; ++oc) {
      std::fill(plane.begin(), plane.end(), static_cast<double>(b_data[oc]));
      for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t kh = 0; kh < k; ++kh) {
          for (std::int64_t kw = 0; kw < k; ++kw) {
            const double w = w_data[((oc * channels + c) * k + kh) * k + kw];
            for (std::int64_t oh = 0; oh < out_h; ++oh) {
              const std::int64_t ih = oh - padding + kh;
              if (ih < 0 || ih >= height) continue;
              const float* x_row = x_data + ((n * channels + c) * height + ih) * width;
              double* plane_row = plane.data() + oh * out_w;
              // ow covers only the positions whose input column iw = ow - padding + kw is inside.
              const std::int64_t ow_begin = std::max<std::int64_t>(0, padding - kw);
              const std::int64_t ow_end = std::min<std::int64_t>(out_w, width + padding - kw);
              for (std::int64_t ow = ow_begin; ow < ow_end; ++ow) plane_row[ow] += w * x_row[ow - padding + kw];
            }
          }
        }
      }
      float* out_plane = out.data() + (n * out_channels + oc) * out_h * out_w;
      for (std::size_t i = 0; i < plane.size(); ++i) out_plane[i] = static_cast<float>(plane[i]);
    }
  }
  return Tensor({batch, out_channels, out_h, out_w}, std::move(out));
}

void register_conv() {
  const std::int64_t batch = 8, channels = 64, out_channels = 64, size = 32, k = 3;
  const int padding = 1;  // stride 1, padding 1: the output is 32 × 32 too
  const std::int64_t out_size = size + 2 * padding - k + 1;
  const std::string group = "conv N=8 C=64->64 32x32 k=3";
  // x (N, C, H, W); weight (out_ch, C, k, k) and bias (out_ch) uniform in ±1/√(C·k·k), like Conv2d's.
  const Tensor x = uniform({batch, channels, size, size}, -1.0f, 1.0f, 1704);
  const float bound = 1.0f / std::sqrt(static_cast<float>(channels * k * k));
  const Tensor weight = uniform({out_channels, channels, k, k}, -bound, bound, 1705);
  const Tensor bias = uniform({out_channels}, -bound, bound, 1706);

  const double positions = static_cast<double>(batch * out_size * out_size);
  const double patch = static_cast<double>(channels * k * k);
  // 2·N·out_ch·out_h·out_w·C·k·k: one multiply and one add per weight per output value.
  const double flops = 2.0 * positions * static_cast<double>(out_channels) * patch;
  // x, weight and bias read, the output written.
  const double bytes = 4.0 * (static_cast<double>(x.numel() + weight.numel() + bias.numel()) +
                              positions * static_cast<double>(out_channels));
  // im2col's patch matrix (N·out_h·out_w, C·k·k): about k² = 9 copies of x.
  const double patch_matrix = 4.0 * positions * patch;
  auto reference = std::make_shared<Reference>([x, weight, bias, padding] {
    return reference_conv2d(x, weight, bias, padding);
  });
  // Sums of 576 products of size up to 1/24, in float: differences near 1e-6.
  const double tolerance = 1e-4;
  add_kernel(
      group, "conv2d_direct", Role::naive, {flops, bytes, 0},
      [x, weight, bias, padding] { return kiln::Conv2dFunction::apply(x, weight, bias, 1, padding); }, reference,
      tolerance);
  add_kernel(
      group, "im2col_conv2d", Role::kernel, {flops, bytes, patch_matrix},
      [x, weight, bias, padding] { return kiln::im2col_conv2d(x, weight, bias, 1, padding); }, reference,
      tolerance);
}

}  // namespace

void register_emulator_counts();  // emulator.cpp: what `grader bench 17 --emulator` counts

void register_benchmarks(const kiln::bench::Options& options) {
  // The default sizes are already the sources' sizes; options.full changes nothing here.
  static_cast<void>(options);
  register_matmul();
  register_gelu();
  register_conv();
  register_emulator_counts();
}
