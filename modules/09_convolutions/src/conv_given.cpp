// Given: the argument checks and node recording around your loops, and the layers' forward().
// Read it: apply() is the pattern for any new differentiable operation (see kiln/autograd.h).
#include <memory>
#include <string>
#include <utility>

#include "kiln/conv.h"

namespace kiln {

Tensor Conv2dFunction::apply(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                             int stride, int padding) {
  if (stride < 1 || padding < 0) {
    throw IndexError("conv2d needs stride >= 1 and padding >= 0, got stride " + std::to_string(stride) +
                     " and padding " + std::to_string(padding));
  }
  if (weight.dim() != 4 || weight.size(2) != weight.size(3)) {
    throw ShapeError("conv2d weight must be (out_ch, C, k, k), got " + to_string(weight.shape()));
  }
  if (bias && bias->shape() != Shape{weight.size(0)}) {
    throw ShapeError("conv2d bias must be (" + std::to_string(weight.size(0)) + ") for weight " +
                     to_string(weight.shape()) + ", got " + to_string(bias->shape()));
  }
  const std::int64_t k = weight.size(2);
  const std::int64_t both_sides = 2 * static_cast<std::int64_t>(padding);  // in std::int64_t: 2·2^30 is past an int
  if (x.dim() != 4 || x.size(2) + both_sides < k || x.size(3) + both_sides < k) {
    throw ShapeError("conv2d input must be (N, C, H, W) with H and W at least k - 2·padding, got " +
                     to_string(x.shape()) + " for weight " + to_string(weight.shape()) +
                     " and padding " + std::to_string(padding));
  }
  auto node = std::make_shared<Conv2dFunction>();
  node->stride = stride;
  node->padding = padding;
  if (bias) return Function::apply(node, {x, weight, *bias});
  return Function::apply(node, {x, weight});
}

Tensor MaxPool2dFunction::apply(const Tensor& x, int kernel_size, int stride) {
  if (kernel_size < 1 || stride < 1) {
    throw IndexError("max pooling needs kernel_size >= 1 and stride >= 1, got " +
                     std::to_string(kernel_size) + " and " + std::to_string(stride));
  }
  if (x.dim() != 4 || x.size(2) < kernel_size || x.size(3) < kernel_size) {
    throw ShapeError("max pooling input must be (N, C, H, W) with H and W at least " +
                     std::to_string(kernel_size) + ", got " + to_string(x.shape()));
  }
  auto node = std::make_shared<MaxPool2dFunction>();
  node->kernel_size = kernel_size;
  node->stride = stride;
  return Function::apply(node, {x});
}

Conv2d::Conv2d(int in_channels, int out_channels, int kernel_size, int stride, int padding,
               bool with_bias, std::uint64_t seed) {
  WichmannHill generator(seed);
  *this = Conv2d(in_channels, out_channels, kernel_size, stride, padding, with_bias, generator);
}

Tensor Conv2d::forward(const Tensor& x) {
  if (has_bias()) return Conv2dFunction::apply(x, weight, bias, stride, padding);
  return Conv2dFunction::apply(x, weight, std::nullopt, stride, padding);
}

MaxPool2d::MaxPool2d(int kernel_size, int stride)
    : kernel_size(kernel_size), stride(stride == -1 ? kernel_size : stride) {}

Tensor MaxPool2d::forward(const Tensor& x) { return MaxPool2dFunction::apply(x, kernel_size, stride); }

}  // namespace kiln
