// Cost formulas: FLOPs and compulsory bytes of one call of each operation, as exact integers.
// Conventions (kiln/profiling.h): a multiply-add is 2 FLOPs, every other operation on a float 1;
// every input read once and every output written once, 4 bytes a float32, 8 an int64.
// Work in std::int64_t throughout: a convolution's FLOPs pass 2³¹ at modest sizes.
// Every size, count and byte total is a std::int64_t, and so is every product of sizes: a
// shape's sizes, and what they multiply to, may pass 2³¹ - 1, the largest int.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kiln/profiling.h"

namespace kiln {

Cost matmul_cost(std::int64_t n, std::int64_t k, std::int64_t m) {
  // n·m outputs, k multiply-adds each; A, B read once, C written once.
  // flops = 2·n·k·m, bytes = 4·(n·k + k·m + n·m).
  throw kiln::NotImplemented();
}

Cost linear_cost(std::int64_t batch, std::int64_t in_features, std::int64_t out_features) {
  // The product x (batch, in)·weight (in, out), then the bias: one addition per output, and
  // out_features more floats to read.
  throw kiln::NotImplemented();
}

Shape conv2d_output_shape(const Shape& input, std::int64_t out_channels, std::int64_t kernel_size,
                          std::int64_t stride, std::int64_t padding) {
  // First the arguments (std::invalid_argument): input 4-D with every size >= 1; out_channels,
  // kernel_size, stride >= 1; padding >= 0; the kernel no larger than the padded H and W (compare
  // kernel_size with H + 2·padding: the formula's integer division truncates toward zero, so its
  // result is 1, not below 1, for a kernel one pixel too large at stride 2).
  // Then (N, out_channels, out_h, out_w), out_h = (H + 2·padding - kernel_size) / stride + 1.
  throw kiln::NotImplemented();
}

Cost conv2d_cost(const Shape& input, std::int64_t out_channels, std::int64_t kernel_size, std::int64_t stride,
                 std::int64_t padding, bool with_bias) {
  // With the output shape from conv2d_output_shape: every output element is C·k·k multiply-adds
  // (padding zeros included), plus one addition for the bias when there is one. Bytes: the images,
  // the weight (out_channels, C, k, k), the bias, and the output.
  throw kiln::NotImplemented();
}

Cost relu_cost(std::int64_t numel) {
  // One operation per element; each element read once and written once.
  throw kiln::NotImplemented();
}

Cost maxpool2d_cost(const Shape& input, std::int64_t kernel_size, std::int64_t stride) {
  // Check the arguments (std::invalid_argument, see the header), then out_h = (H - k) / stride + 1
  // (no padding). k·k - 1 comparisons per output; the whole input read once, the output written.
  throw kiln::NotImplemented();
}

Cost cross_entropy_cost(std::int64_t batch, std::int64_t classes) {
  // 4·classes per row (the header's table), then batch - 1 additions and one division for the
  // mean. Bytes: the logits, the int64 targets, and the one float of the loss.
  throw kiln::NotImplemented();
}

}  // namespace kiln
