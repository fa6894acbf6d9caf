// Module 14, Profiling: what each layer of a model costs on paper (FLOPs, bytes moved, memory
// kept), and what it costs on the clock, measured layer by layer on your own model.
//
// The counting conventions, stated once (the chapter works them out):
//   FLOPs   every arithmetic operation on one float counts 1: +, -, ×, ÷, max, exp, log, and a
//           comparison. A multiply-add counts 2. Padding zeros are multiplied like any other
//           input (a convolution's count depends only on the shapes, not on where the window is).
//   bytes   compulsory traffic: every input tensor read once, every output tensor written once,
//           4 bytes per float32, 8 per int64 (class ids, argmax indices); a layer's parameters
//           are inputs. Nothing is counted twice, nothing read from a cache is free or dear.
//   memory  a training step keeps, at its peak (estimate_memory):
//             parameters + their gradients + the activations the forward saved for backward
//             + the largest transient, the gradients flowing into and out of one layer while its
//               backward runs.
//           What each layer saves is listed at saved_activation_bytes.
//
// Every size, count and byte total is a std::int64_t, and so is every product of sizes: a
// shape's sizes, and what they multiply to, may pass 2³¹ - 1, the largest int.
//
// Layouts are those of the modules the layers come from: x (N, features) for Linear (module 08,
// weight (in, out)); images (N, C, H, W) for Conv2d and MaxPool2d (module 09).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/conv.h"
#include "kiln/errors.h"
#include "kiln/tensor.h"
#include "kiln/training.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Cost formulas (yours: src/costs.cpp). Pure functions of the sizes; sizes are at least 1.

// The work of one call: FLOPs and compulsory bytes, both exact integers.
struct Cost {
  std::int64_t flops = 0;  // arithmetic operations, a multiply-add counted as 2
  std::int64_t bytes = 0;  // bytes read and written at least once

  // FLOPs per byte moved, the x-axis of a roofline; 0 when nothing moves.
  double intensity() const { return bytes > 0 ? static_cast<double>(flops) / static_cast<double>(bytes) : 0.0; }
  bool operator==(const Cost&) const = default;
};

// A (n, k) times B (k, m): n·m outputs, each k multiply-adds.
//   flops = 2·n·k·m      bytes = 4·(n·k + k·m + n·m)
// matmul_cost(2, 3, 4) = {48, 104}.
Cost matmul_cost(std::int64_t n, std::int64_t k, std::int64_t m);

// module 08's Linear on a batch: y (batch, out) = x (batch, in)·weight (in, out) + bias (out).
//   flops = 2·batch·in·out + batch·out   (the product, then one addition per output for the bias)
//   bytes = 4·(batch·in + in·out + out + batch·out)
// linear_cost(2, 3, 4) = {56, 120}.
Cost linear_cost(std::int64_t batch, std::int64_t in_features, std::int64_t out_features);

// The output shape of module 09's convolution of images `input` (N, C, H, W) with out_channels
// filters of kernel_size × kernel_size: (N, out_channels, out_h, out_w), where
//   out_h = (H + 2·padding - kernel_size) / stride + 1   (integer division), and out_w alike.
// Throws std::invalid_argument when input is not 4-D or has a size below 1, when out_channels,
// kernel_size or stride is below 1, padding is negative, or the kernel is larger than the padded
// image (H + 2·padding < kernel_size, or the same for W), at every stride: the formula's integer
// division truncates toward zero, so it gives 1 for a 5×5 kernel on 4×4 images at stride 2.
Shape conv2d_output_shape(const Shape& input, std::int64_t out_channels, std::int64_t kernel_size,
                          std::int64_t stride, std::int64_t padding);

// module 09's Conv2d on `input` (N, C, H, W), weight (out_channels, C, k, k), bias (out_channels)
// when with_bias. With the output (N, out_channels, out_h, out_w) of conv2d_output_shape:
//   flops = 2·(N·out_channels·out_h·out_w)·(C·k·k) + (with_bias ? N·out_channels·out_h·out_w : 0)
//   bytes = 4·(N·C·H·W + out_channels·C·k·k + (with_bias ? out_channels : 0) + N·out_channels·out_h·out_w)
// Throws what conv2d_output_shape throws.
Cost conv2d_cost(const Shape& input, std::int64_t out_channels, std::int64_t kernel_size, std::int64_t stride,
                 std::int64_t padding, bool with_bias);

// ReLU (or any one-operation elementwise function) on `numel` floats: one operation each, every
// element read and written.
//   flops = numel        bytes = 4·2·numel
Cost relu_cost(std::int64_t numel);

// module 09's MaxPool2d on `input` (N, C, H, W): windows kernel_size × kernel_size every `stride`,
// no padding; output (N, C, out_h, out_w) with out_h = (H - kernel_size) / stride + 1, and out_w
// alike. Each output is the largest of k·k values: k·k - 1 comparisons.
//   flops = N·C·out_h·out_w·(k·k - 1)
//   bytes = 4·(N·C·H·W + N·C·out_h·out_w)   (the whole input once, the output once)
// The argmax a training forward keeps is memory (saved_activation_bytes), not traffic counted here.
// Throws std::invalid_argument when input is not 4-D or has a size below 1, kernel_size or stride
// is below 1, or the window is larger than H or W.
Cost maxpool2d_cost(const Shape& input, std::int64_t kernel_size, std::int64_t stride);

// Module 04's cross_entropy of logits (batch, classes) against batch class ids (int64), the mean
// loss, computed the stable way. Per row of C logits z:
//   m = max(z)               C - 1     comparisons
//   s = z - m                C         subtractions
//   e = exp(s)               C         exponentials
//   t = Σ e                  C - 1     additions
//   loss = log(t) - s[y]     2         a logarithm and a subtraction
// that is 4·C per row; then the mean over the rows: batch - 1 additions and 1 division.
//   flops = 4·batch·classes + batch
//   bytes = 4·batch·classes + 8·batch + 4   (logits and int64 targets read, one float written)
// cross_entropy_cost(2, 3) = {26, 44}.
Cost cross_entropy_cost(std::int64_t batch, std::int64_t classes);

// ---------------------------------------------------------------------------------------------
// Layers the profiler knows (given: src/profiling_given.cpp)

namespace nn {

// Module 09's Conv2d as a module 08 Module: its weight, and its bias when it has one, registered
// as the parameters "weight" and "bias"; forward(x) is conv.forward(x).
class Conv2dLayer : public Module {
 public:
  Conv2dLayer(int in_channels, int out_channels, int kernel_size, int stride, int padding, bool with_bias,
              WichmannHill& generator);
  Tensor forward(const Tensor& x) override;
  Conv2d conv;
};

// Module 09's MaxPool2d as a module 08 Module (no parameters); stride -1 means stride = kernel_size.
class MaxPool2dLayer : public Module {
 public:
  explicit MaxPool2dLayer(int kernel_size, int stride = -1);
  Tensor forward(const Tensor& x) override;
  MaxPool2d pool;
};

}  // namespace nn

// Given: what kind of layer `layer` is: "Linear", "ReLU", "Flatten", "Conv2d" (an
// nn::Conv2dLayer), "MaxPool2d" (an nn::MaxPool2dLayer), or "other" for any other Module.
std::string layer_kind(const nn::Module& layer);

// Yours (src/profiler.cpp): the Cost of one call of `layer` on an input of shape `input_shape`,
// by its kind:
//   Linear     linear_cost(N, in_features, out_features), N = input_shape[0]
//   ReLU       relu_cost(numel of input_shape)
//   Flatten    {0, 0}: a reshape of a contiguous tensor is a view, nothing computed or moved
//   Conv2d     conv2d_cost(input_shape, out_channels, kernel_size, stride, padding, has_bias())
//   MaxPool2d  maxpool2d_cost(input_shape, kernel_size, stride)
//   other      {0, 0}: the profiler times it but cannot know its work
Cost layer_cost(const nn::Module& layer, const Shape& input_shape);

// ---------------------------------------------------------------------------------------------
// The profiler (yours: src/profiler.cpp)

// A clock: each call returns the current time in seconds from a fixed origin; it never goes
// backwards, and only differences between readings mean anything.
using Clock = std::function<double()>;

// Given: std::chrono::steady_clock's current time in seconds, as a double.
double steady_clock_seconds();

struct ProfileOptions {
  int warmup = 1;        // whole forward passes run first, untimed and unrecorded
  int repetitions = 10;  // whole forward passes timed, layer by layer
};

// What the profiler learnt about one layer of a Sequential.
struct LayerRecord {
  std::string name;        // the layer's name in the Sequential: "0", "1", ...
  std::string kind;        // layer_kind(layer)
  Shape input_shape;       // what the layer was called on
  Shape output_shape;      // what it returned
  std::int64_t calls = 0;  // timed calls: options.repetitions
  double seconds = 0;      // the sum of its timed calls' durations
  Cost cost;               // of one call: layer_cost(layer, input_shape)

  double seconds_per_call() const { return calls > 0 ? seconds / static_cast<double>(calls) : 0.0; }
  // The rate the layer ran at: calls·flops / seconds, in 10⁹ FLOP per second; 0 before any time.
  double gflops_per_second() const {
    return seconds > 0 ? static_cast<double>(calls) * static_cast<double>(cost.flops) / seconds / 1e9 : 0.0;
  }
};

// Profiles model(x) layer by layer. The forward pass is the Sequential's own, one child after the
// other (children() in order, each called on the last one's output), with the clock read around
// each child:
//   1. options.warmup passes, reading no clock and recording nothing;
//      every pass, warm-up or timed, is model(x): it starts from x, not from the last pass's output;
//   2. options.repetitions passes, each child's call timed alone: start = clock(), call,
//      stop = clock(), and stop - start added to that child's record: two readings per child
//      per pass, none shared.
// Returns one record per child, in order, with its name, kind, input and output shapes (every pass
// sees the same ones; noted in the timed passes, since warmup may be 0), calls, seconds and cost.
// An empty Sequential gives no records.
// Throws std::invalid_argument, before calling anything, when warmup < 0 or repetitions < 1 (an
// empty Sequential too: the options are checked first).
std::vector<LayerRecord> profile_forward(nn::Sequential& model, const Tensor& x, const ProfileOptions& options = {},
                                         const Clock& clock = steady_clock_seconds);

// ---------------------------------------------------------------------------------------------
// Memory (yours: src/memory.cpp), from the shapes a profile saw

// The bytes a training forward keeps alive for backward, layer by layer, by kind:
//   Linear, Conv2d, ReLU   its input: 4·numel(input)
//                          (dW = xᵀ·dy needs x; ReLU's backward needs to know where x > 0)
//   MaxPool2d              its input and its argmax: 4·numel(input) + 8·numel(output)
//                          (module 09 keeps one int64 index per output element)
//   Flatten                nothing: its output is a view of its input, the same memory that
//                          the next layer keeps
//   other                  its input, as every node of module 06's graph keeps its inputs
// The model's input x is the first layer's input, and counts. The model's output is not counted:
// the loss, outside the model, keeps it.
std::int64_t saved_activation_bytes(const std::vector<LayerRecord>& records);

// The largest transient of backward: while one layer's backward runs, the gradient with respect
// to its output and the gradient with respect to its input both exist. The largest, over the
// layers, of 4·(numel(input) + numel(output)), both numels of the same layer: Linear(100, 10),
// ReLU, Linear(10, 50) at batch 1 gives 4·(100 + 10) = 440, not 4·(100 + 50). 0 for no layers.
std::int64_t largest_transient_bytes(const std::vector<LayerRecord>& records);

struct MemoryEstimate {
  std::int64_t parameter_bytes = 0;   // 4·Σ numel over model.parameters()
  std::int64_t gradient_bytes = 0;    // the same: backward leaves one gradient per parameter
                                      // (every one: requires_grad() at the time of the estimate,
                                      // a frozen bias or a NoGradGuard, changes nothing)
  std::int64_t activation_bytes = 0;  // saved_activation_bytes(records)
  std::int64_t transient_bytes = 0;   // largest_transient_bytes(records)
  std::int64_t peak_bytes() const { return parameter_bytes + gradient_bytes + activation_bytes + transient_bytes; }
};

// The peak memory of one forward and backward of `model` on the input its profile `records` saw.
// The MLP 784-256-128-10 at batch 64: 940,584 bytes of parameters, as many of gradients, 397,312
// of activations and a transient of 266,240, a peak of 2,544,720 bytes.
MemoryEstimate estimate_memory(const nn::Module& model, const std::vector<LayerRecord>& records);

}  // namespace kiln
