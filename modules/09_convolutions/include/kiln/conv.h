// Module 09, Convolutions: Conv2d and MaxPool2d written as direct loops, with their backward
// passes as module 06 Functions so that a network trains through them.
//
// Layouts, all row-major float32:
//   images   x (N, C, H, W): element (n, c, h, w) at ((n·C + c)·H + h)·W + w
//   weight   (out_ch, C, k, k): element (oc, c, kh, kw) at ((oc·C + c)·k + kh)·k + kw
//   bias     (out_ch), or no bias at all
//   output   (N, out_ch, out_h, out_w) with out_h = (H + 2·padding - k) / stride + 1, and the same
//            for out_w (integer division)
// Output position (oh, ow) reads the k×k window whose top-left corner is input row
// oh·stride - padding and column ow·stride - padding; where the window hangs over the edge it
// reads zeros (only H and W are padded). Like every deep-learning framework, "convolution" here is
// cross-correlation: the kernel is not flipped.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

// The number of window positions along one axis: (size + 2·padding - kernel_size) / stride + 1,
// in std::int64_t like size: a size or padded size past 2^31 does not wrap (4294967303 with
// kernel 3, stride 1, padding 0 gives 4294967301), and 2·padding is doubled in std::int64_t too:
// padding 2^30 (size 3, kernel 3, stride 1) gives 2147483649.
std::int64_t conv_output_size(std::int64_t size, int kernel_size, int stride, int padding);

// Convolution as a node of the autograd graph.
//   inputs: x (N, C, H, W), weight (out_ch, C, k, k), and bias (out_ch) when there is one; x
//           may be a view (a transposed image batch, or one image of a batch at an offset), which
//           forward and backward read from where it starts, through its strides
//   output: (N, out_ch, out_h, out_w)
// Every tensor forward and backward read (x, the weight, the bias, grad_output) may be a
// contiguous view at an offset: read it from data(), where it starts, never storage_data().
struct Conv2dFunction : autograd::Function {
  int stride = 1;
  int padding = 0;

  // Given. Checks the arguments (x 4-D, weight (out_ch, C, k, k), bias (out_ch), stride >= 1,
  // padding >= 0, the padded image at least one window large: ShapeError or IndexError), then
  // records a node with inputs {x, weight} or {x, weight, bias}.
  static Tensor apply(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                      int stride, int padding);

  // out[n, oc, oh, ow] = bias[oc] + Σ_{c, kh, kw} x[n, c, oh·s - p + kh, ow·s - p + kw]·weight[oc, c, kh, kw]
  // An empty batch (N = 0) gives an empty output (0, out_ch, out_h, out_w).
  // Throws ShapeError naming both shapes when x's channels differ from the weight's.
  Tensor forward() override;

  // The gradients of x, weight and (when there is one) bias, in that order.
  // The bias gradient takes each go once per output element, not once per input channel (outside the loop over c): grad_b[oc] = Σ_{n, oh, ow} go.
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

// Max pooling as a node of the autograd graph: every output element is the largest value of its
// kernel_size × kernel_size window, windows start every `stride` rows and columns, no padding.
//   input x (N, C, H, W), which may be a view (one image of a batch at an offset, a transpose);
//   output (N, C, out_h, out_w) with out_h = (H - k) / stride + 1
struct MaxPool2dFunction : autograd::Function {
  int kernel_size = 2;
  int stride = 2;
  // Filled by forward(): for every output element, in the output's row-major order, the
  // row-major index into x of the value it took (the first largest one in the window). A window
  // where nothing beats -infinity took its first element, at row oh·stride and column ow·stride.
  std::vector<std::int64_t> argmax;

  // Given. Checks the arguments (x 4-D, kernel_size >= 1, stride >= 1, the window fits in H and
  // W) and records a node with inputs {x}.
  static Tensor apply(const Tensor& x, int kernel_size, int stride);

  // An empty batch (N = 0) gives an empty output (0, C, out_h, out_w).
  Tensor forward() override;
  // The gradient of x: each output's gradient goes to the input element it took (argmax);
  // every other element gets 0. Where windows overlap an element may receive several.
  // grad_output may be a view, a contiguous one at an offset too: read it from data(), where it
  // starts, never storage_data().
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

// A 2-D convolution layer with trainable weight and bias.
class Conv2d {
 public:
  // Draws the weight, then the bias, from WichmannHill(seed): the same seed gives the same layer.
  Conv2d(int in_channels, int out_channels, int kernel_size, int stride = 1, int padding = 0,
         bool with_bias = true, std::uint64_t seed = 0);
  // Draws the weight, then the bias, from `generator`, so that the layers of a network can share
  // one stream of random numbers.
  Conv2d(int in_channels, int out_channels, int kernel_size, int stride, int padding,
         bool with_bias, WichmannHill& generator);

  // x (N, in_channels, H, W) -> (N, out_channels, out_h, out_w), recorded for backward.
  Tensor forward(const Tensor& x);

  bool has_bias() const { return bias.numel() > 0; }

  int in_channels = 0;
  int out_channels = 0;
  int kernel_size = 1;
  int stride = 1;
  int padding = 0;
  // (out_ch, C, k, k), uniform in [-bound, bound] with bound = 1/√(C·k·k); requires grad.
  Tensor weight;
  // (out_ch), uniform in [-bound, bound]; requires grad. Shape (0) when built without bias.
  Tensor bias;
};

// A 2-D max-pooling layer; it has no parameters.
class MaxPool2d {
 public:
  // stride -1 means stride = kernel_size: windows side by side, not overlapping.
  explicit MaxPool2d(int kernel_size, int stride = -1);

  // x (N, C, H, W) -> (N, C, out_h, out_w), recorded for backward.
  Tensor forward(const Tensor& x);

  int kernel_size = 1;
  int stride = 1;
};

}  // namespace kiln
