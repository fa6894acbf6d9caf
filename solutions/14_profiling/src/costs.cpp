// Cost formulas: FLOPs and compulsory bytes of one call of each operation, as exact integers.
// Conventions (kiln/profiling.h): a multiply-add is 2 FLOPs, every other operation on a float 1;
// every input read once and every output written once, 4 bytes a float32, 8 an int64.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kiln/profiling.h"

namespace kiln {
namespace {

constexpr std::int64_t kFloat = 4;  // bytes of a float32
constexpr std::int64_t kIndex = 8;  // bytes of an int64

// input must be (N, C, H, W) with every size at least 1.
void check_images(const Shape& input, const char* function) {
  bool positive = input.size() == 4;
  for (const std::int64_t size : input) positive = positive && size >= 1;
  if (!positive) {
    throw std::invalid_argument(std::string(function) + " needs images (N, C, H, W) with every size at least 1, got " +
                                to_string(input));
  }
}

}  // namespace

Cost matmul_cost(std::int64_t n, std::int64_t k, std::int64_t m) {
  return {2 * n * k * m, kFloat * (n * k + k * m + n * m)};
}

Cost linear_cost(std::int64_t batch, std::int64_t in_features, std::int64_t out_features) {
  const Cost product = matmul_cost(batch, in_features, out_features);
  const std::int64_t outputs = batch * out_features;
  // The bias adds one FLOP per output, and out_features floats to read.
  return {product.flops + outputs, product.bytes + kFloat * out_features};
}

Shape conv2d_output_shape(const Shape& input, std::int64_t out_channels, std::int64_t kernel_size,
                          std::int64_t stride, std::int64_t padding) {
  check_images(input, "conv2d_output_shape");
  if (out_channels < 1 || kernel_size < 1 || stride < 1 || padding < 0) {
    throw std::invalid_argument("conv2d_output_shape needs out_channels, kernel_size, stride >= 1 and padding >= 0, got " +
                                std::to_string(out_channels) + ", " + std::to_string(kernel_size) + ", " +
                                std::to_string(stride) + ", " + std::to_string(padding));
  }
  const std::int64_t height = input[2], width = input[3];
  if (height + 2 * padding < kernel_size || width + 2 * padding < kernel_size) {
    throw std::invalid_argument("conv2d_output_shape: a " + std::to_string(kernel_size) + "x" +
                                std::to_string(kernel_size) + " kernel does not fit images " + to_string(input) +
                                " padded by " + std::to_string(padding));
  }
  const std::int64_t out_h = (height + 2 * padding - kernel_size) / stride + 1;
  const std::int64_t out_w = (width + 2 * padding - kernel_size) / stride + 1;
  return {input[0], out_channels, out_h, out_w};
}

Cost conv2d_cost(const Shape& input, std::int64_t out_channels, std::int64_t kernel_size, std::int64_t stride,
                 std::int64_t padding, bool with_bias) {
  const Shape output = conv2d_output_shape(input, out_channels, kernel_size, stride, padding);
  const std::int64_t channels = input[1];
  const std::int64_t outputs = output[0] * output[1] * output[2] * output[3];
  const std::int64_t window = channels * kernel_size * kernel_size;  // multiply-adds per output
  const std::int64_t weights = out_channels * window;
  const std::int64_t bias = with_bias ? out_channels : 0;
  return {2 * outputs * window + (with_bias ? outputs : 0), kFloat * (numel(input) + weights + bias + outputs)};
}

Cost relu_cost(std::int64_t numel) { return {numel, kFloat * 2 * numel}; }

Cost maxpool2d_cost(const Shape& input, std::int64_t kernel_size, std::int64_t stride) {
  check_images(input, "maxpool2d_cost");
  if (kernel_size < 1 || stride < 1) {
    throw std::invalid_argument("maxpool2d_cost needs kernel_size and stride >= 1, got " + std::to_string(kernel_size) +
                                " and " + std::to_string(stride));
  }
  if (input[2] < kernel_size || input[3] < kernel_size) {
    throw std::invalid_argument("maxpool2d_cost: a " + std::to_string(kernel_size) + "x" + std::to_string(kernel_size) +
                                " window does not fit images " + to_string(input));
  }
  const std::int64_t out_h = (input[2] - kernel_size) / stride + 1;
  const std::int64_t out_w = (input[3] - kernel_size) / stride + 1;
  const std::int64_t outputs = input[0] * input[1] * out_h * out_w;
  return {outputs * (kernel_size * kernel_size - 1), kFloat * (numel(input) + outputs)};
}

Cost cross_entropy_cost(std::int64_t batch, std::int64_t classes) {
  // 4·C per row (max, shift, exp, sum, log and the pick), then a mean over the rows.
  const std::int64_t per_row = 4 * classes;
  return {batch * per_row + batch, kFloat * batch * classes + kIndex * batch + kFloat};
}

}  // namespace kiln
