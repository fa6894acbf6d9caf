// Given: what `grader bench 15` times. One group per size, y = x·wᵀ for x (M, K) and w (N, K),
// the shapes of a layer's forward pass over a batch:
//
//   matmul (float)   module 01's float product, three loops (the naive baseline)
//   int8_matmul      your int8 product on codes quantized once, outside the timing: int32 sums,
//                    one rescale per output
//   Eigen (float)    Eigen's float product (the library baseline: blocked for the caches, SIMD)
//
// Sizes: (M, K, N) = (64, 784, 256), the milestone's first layer on a batch of 64, and
// (256, 512, 512); with --full also (256, 1024, 1024).
//
// Before a kernel is timed its result is checked: the float products against a product computed
// here in double, to 1e-4; int8_matmul against the same codes multiplied here in int64 and
// rescaled in double, to 1e-5. A kernel you have not written yet throws kiln::NotImplemented,
// which the bench reports as not written.
//
// The counts given for each kernel:
//   flops        2·M·K·N: one multiply and one add per term, float or integer
//   bytes        the operands read and the output written once: 4 bytes a value for float;
//                1 byte a code, 4 per weight scale and 4 per float output for int8
//   extra_bytes  int8_matmul's M·N int32 sums, built before the rescale
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kiln/bench.h"
#include "kiln/eigen.h"
#include "kiln/quantization.h"

namespace {

using kiln::Tensor;
using kiln::bench::Role;
using kiln::bench::uniform_values;

// Codes in [-127, 127] from the same generator.
std::vector<std::int8_t> uniform_codes(std::size_t count, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<std::int8_t> codes(count);
  for (std::int8_t& c : codes) c = static_cast<std::int8_t>(static_cast<int>(generator() % 255) - 127);
  return codes;
}

struct Problem {
  std::int64_t m, k, n;
  // Float operands: x (M, K) and wᵀ (K, N), row-major; the reference y (M, N) from double.
  std::vector<float> x_values, wt_values, expected;
  // Int8 operands: x codes (M, K) with one scale, w codes (N, K) with a scale per row; the
  // reference y (M, N) from int64 sums rescaled in double.
  kiln::quant::QuantizedTensor x_codes;
  kiln::quant::QuantizedWeight w_codes;
  std::vector<float> expected_int8;
  std::optional<Tensor> x, wt;  // built on first use (they need module 01's Tensor)

  Problem(std::int64_t rows, std::int64_t inner, std::int64_t outputs) : m(rows), k(inner), n(outputs) {
    x_values = uniform_values(static_cast<std::size_t>(m * k), 3);
    wt_values = uniform_values(static_cast<std::size_t>(k * n), 11);
    std::vector<double> y(static_cast<std::size_t>(m * n), 0.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p)
        for (std::int64_t j = 0; j < n; ++j)
          y[static_cast<std::size_t>(i * n + j)] += static_cast<double>(x_values[static_cast<std::size_t>(i * k + p)]) *
                                                    wt_values[static_cast<std::size_t>(p * n + j)];
    expected.assign(y.begin(), y.end());

    x_codes = {uniform_codes(static_cast<std::size_t>(m * k), 5), 1.0f / 127, m, k};
    w_codes.codes = uniform_codes(static_cast<std::size_t>(n * k), 13);
    w_codes.rows = n;
    w_codes.cols = k;
    for (std::int64_t j = 0; j < n; ++j) w_codes.scales.push_back(static_cast<float>(j + 1) / (127.0f * static_cast<float>(n)));
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        std::int64_t sum = 0;
        for (std::int64_t p = 0; p < k; ++p)
          sum += std::int64_t{x_codes.codes[static_cast<std::size_t>(i * k + p)]} * w_codes.codes[static_cast<std::size_t>(j * k + p)];
        expected_int8.push_back(static_cast<float>(static_cast<double>(x_codes.scale) *
                                                   w_codes.scales[static_cast<std::size_t>(j)] * static_cast<double>(sum)));
      }
    }
  }

  const Tensor& lhs() {
    if (!x) x = Tensor({m, k}, x_values);
    return *x;
  }
  const Tensor& rhs() {
    if (!wt) wt = Tensor({k, n}, wt_values);
    return *wt;
  }

  std::string check(const Tensor& y, const std::vector<float>& reference, double tolerance) const {
    if (y.shape() != kiln::Shape{m, n})
      return "the product has shape " + kiln::to_string(y.shape()) + ", expected " + kiln::to_string({m, n});
    const std::string difference = kiln::bench::compare(y.contiguous().data(), reference.data(), reference.size(), tolerance);
    return difference.empty() ? "" : "the product: " + difference;
  }
};

void add_group(std::int64_t m, std::int64_t k, std::int64_t n) {
  auto problem = std::make_shared<Problem>(m, k, n);
  const std::string group = "y = x·wᵀ, x (" + std::to_string(m) + ", " + std::to_string(k) + "), w (" + std::to_string(n) +
                            ", " + std::to_string(k) + ")";
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  const double float_bytes = 4.0 * static_cast<double>(m * k + k * n + m * n);
  const double int8_bytes = static_cast<double>(m * k + n * k) + 4.0 * static_cast<double>(n + m * n);

  {
    auto result = std::make_shared<Tensor>();
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = "matmul (float)";
    kernel.role = Role::naive;
    kernel.flops = flops;
    kernel.bytes = float_bytes;
    kernel.run = [problem, result] { *result = kiln::matmul(problem->lhs(), problem->rhs()); };
    kernel.validate = [problem, result] { return problem->check(*result, problem->expected, 1e-4); };
    kiln::bench::add(std::move(kernel));
  }
  {
    auto result = std::make_shared<Tensor>();
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = "int8_matmul";
    kernel.role = Role::kernel;
    kernel.flops = flops;
    kernel.bytes = int8_bytes;
    kernel.extra_bytes = 4.0 * static_cast<double>(m * n);
    kernel.run = [problem, result] { *result = kiln::quant::int8_matmul(problem->x_codes, problem->w_codes); };
    kernel.validate = [problem, result] { return problem->check(*result, problem->expected_int8, 1e-5); };
    kiln::bench::add(std::move(kernel));
  }
  {
    auto result = std::make_shared<Tensor>();
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = "Eigen (float)";
    kernel.role = Role::library;
    kernel.flops = flops;
    kernel.bytes = float_bytes;
    kernel.run = [problem, result] { *result = kiln::eigen::product(problem->lhs(), problem->rhs(), "Eigen (float)"); };
    kernel.validate = [problem, result] { return problem->check(*result, problem->expected, 1e-4); };
    kiln::bench::add(std::move(kernel));
  }
}

}  // namespace

void register_benchmarks(const kiln::bench::Options& options) {
  add_group(64, 784, 256);
  add_group(256, 512, 512);
  if (options.full) add_group(256, 1024, 1024);
}
