// Module 17, Acceleration: the same operations, computed faster.
//
// Two matrix products (a BLAS-style one that is given, and a cache-tiled one you write), two
// GELUs (a staged one that is given, and a fused one you write), and convolution lowered to one
// matrix multiply with im2col, with a backward pass through col2im so that it trains.
//
// Layouts, all row-major float32:
//   matrices           (rows, cols)
//   images             x (N, C, H, W)
//   convolution weight (out_ch, C, k, k), bias (out_ch)
//   patch matrix       cols (N·out_h·out_w, C·k·k): one row per output position (n, oh, ow), one
//                      column per (c, kh, kw) at (c·k + kh)·k + kw, the order of the flattened weight
//   output size        out_h = (H + 2·padding - k) / stride + 1, and the same for out_w, in
//                      integer division: rounded down, never up (no window past the padded image)
// A contiguous view at an offset (a slice of a larger tensor) starts at data(), offset() floats
// into its storage, not at storage_data(), the storage's first float: read every input from
// data() after contiguous().
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/tensor.h"

namespace kiln {

// Given (src/vectorized.cpp): the product of (n, k) and (k, m) matrices, computed by Eigen.
// Throws ShapeError naming both shapes when either is not 2-D or the inner sizes differ.
Tensor vectorized_matmul(const Tensor& a, const Tensor& b);

// The same product, computed tile by tile so that the three tiles in use stay in the cache.
// Same result, same ShapeError as vectorized_matmul; throws IndexError when tile_size < 1.
// Same result for values that are not finite too: 0·inf and 0·NaN are NaN, as in a plain loop,
// so no product is skipped because a's value is 0.
Tensor tiled_matmul(const Tensor& a, const Tensor& b, int tile_size = 64);

// Challenge (optional): the same product the way a BLAS library computes it. Panels of B and
// blocks of A are packed into contiguous buffers sized for the caches, and a micro-kernel keeps
// a small block of C (a few rows by 16 columns) in vector registers across the whole inner loop.
// Same result and same ShapeError as vectorized_matmul, for any sizes, not only multiples of
// the blocks.
Tensor blocked_matmul(const Tensor& a, const Tensor& b);

// Given (src/gelu_given.cpp): GELU in tanh form, staged one tensor operation at a time.
Tensor unfused_gelu(const Tensor& x);

// GELU in tanh form, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), in one pass over x.
// The result is a new contiguous tensor of x's shape; x is left as it is. Finite x gives a finite
// GELU(x) up to the largest float: x there, since the 0.5 halves x before 1 + tanh(u) ≈ 2 doubles
// it (x·(1 + tanh(u)) first would overflow for x above FLT_MAX/2 ≈ 1.7e38).
Tensor fused_gelu(const Tensor& x);

// The patch matrix (N·out_h·out_w, C·k·k) of x (N, C, H, W): row (n·out_h + oh)·out_w + ow holds
// the k×k window whose top-left corner is at (oh·stride - padding, ow·stride - padding) in every
// channel, zero where the window hangs over the edge (only H and W are padded).
// Throws ShapeError when x is not 4-D or the window does not fit; IndexError when
// kernel_size < 1, stride < 1 or padding < 0.
Tensor im2col(const Tensor& x, int kernel_size, int stride = 1, int padding = 0);

// The adjoint of im2col: scatters the rows of cols (N·out_h·out_w, C·k·k) back into an image of
// shape x_shape (N, C, H, W), adding where patches overlap; values that fell on the padding are
// dropped. Refuses what im2col refuses, with the same errors: ShapeError when x_shape is not 4-D
// or the window does not fit, IndexError when kernel_size < 1, stride < 1 or padding < 0. Then
// throws ShapeError when cols does not have the shape im2col would give for x_shape.
Tensor col2im(const Tensor& cols, const Shape& x_shape, int kernel_size, int stride = 1,
              int padding = 0);

// Convolution as one matrix multiply: im2col(x) (N·out_h·out_w, C·k·k) times the flattened,
// transposed weight (C·k·k, out_ch), plus the bias, moved to (N, out_ch, out_h, out_w).
// The same numbers as Conv2d's direct loops. Throws ShapeError when the shapes do not fit.
Tensor im2col_conv2d(const Tensor& x, const Tensor& weight,
                     const std::optional<Tensor>& bias = std::nullopt, int stride = 1,
                     int padding = 0);

// im2col_conv2d as an autograd Function (module 06), so that a network can train through it.
// inputs are {x, weight} or {x, weight, bias}; backward() returns their gradients in that order:
//   G      = grad_output (N, out_ch, out_h, out_w) moved to (N, out_h, out_w, out_ch), flattened
//            to (N·out_h·out_w, out_ch)
//   weight = (colsᵀ · G)ᵀ, (out_ch, C·k·k) reshaped to (out_ch, C, k, k)
//   bias   = G summed over its rows, (out_ch)
//   x      = col2im(G · weight flattened to (out_ch, C·k·k))
struct Im2colConv2dFunction : autograd::Function {
  int stride = 1;
  int padding = 0;
  // The patch matrix (N·out_h·out_w, C·k·k) of inputs[0], kept by forward() for backward().
  Tensor cols;

  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;

  // Given: records the node, like every module 06 operation.
  static Tensor apply(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
                      int stride = 1, int padding = 0) {
    auto node = std::make_shared<Im2colConv2dFunction>();
    node->stride = stride;
    node->padding = padding;
    std::vector<Tensor> inputs{x, weight};
    if (bias) inputs.push_back(*bias);
    return Function::apply(node, std::move(inputs));
  }
};

}  // namespace kiln
