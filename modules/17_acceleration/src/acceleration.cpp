// Module 17: Acceleration. You write a cache-tiled matrix multiply, a fused GELU, im2col and its
// adjoint col2im, and convolution as one matrix multiply, forward and backward. An optional
// challenge, blocked_matmul, packs and register-blocks the product the way a BLAS library does.
//
// Reminders (kiln/acceleration.h has the full contract):
//   Matrices are row-major: element (i, j) of an (n, m) matrix is data[i·m + j]. data() needs a
//   contiguous tensor: call contiguous() on an input first (a transposed view is not).
//   A contiguous view at an offset (a slice of a larger tensor) starts at data(), offset() floats
//   into its storage, not at storage_data(), the storage's first float: read every input from
//   data() after contiguous().
//   Images x are (N, C, H, W), convolution weights (out_ch, C, k, k), bias (out_ch).
//   out_h = (H + 2·padding - k) / stride + 1, and the same for out_w, rounded down (integer
//   division): a window that would hang past the padded image is no window.
//   The patch matrix cols is (N·out_h·out_w, C·k·k): row (n·out_h + oh)·out_w + ow, column
//   (c·k + kh)·k + kw, holding x[n, c, oh·stride - padding + kh, ow·stride - padding + kw], or 0
//   where that falls outside the image.
// Errors: ShapeError naming both shapes for shapes that do not fit; IndexError for a
// kernel_size, stride or tile_size below 1 or a negative padding.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "kiln/acceleration.h"

namespace kiln {

Tensor tiled_matmul(const Tensor& a, const Tensor& b, int tile_size) {
  // a (n, inner) times b (inner, m) is c (n, m), start from zeros. Walk c in tile_size × tile_size
  // tiles: for each output tile (rows i0.., columns j0..), for each tile of the inner index
  // (k0..), add A[i0.., k0..] · B[k0.., j0..] into C[i0.., j0..]. Accumulate (+=) across the
  // inner tiles: the output tile sums the products of all of them. Inside the tiles use i-k-j
  // order, so the innermost loop walks a row of b and a row of c with stride 1. Tiles at the
  // right and bottom edges are smaller: stop at min(i0 + tile_size, n), and so on.
  // Three tiles of t² floats (4 bytes each) should fit in L1 together: 3·t²·4 bytes.
  // Same ShapeError as vectorized_matmul (not 2-D, or inner sizes differ); IndexError for
  // tile_size < 1. Add every product, also where a's value is 0: 0·inf and 0·NaN are NaN.
  throw kiln::NotImplemented();
}

Tensor blocked_matmul(const Tensor& a, const Tensor& b) {
  // Challenge, optional: the product as a BLAS library computes it (GotoBLAS, BLIS). The chapter's
  // "Challenge" section walks through it; the bench compares it with Eigen.
  // 1. A micro-kernel owns an MR × NR block of C, say 6 × 16, and keeps it in vector registers
  //    for the whole inner loop: 12 vectors of 8 floats. Declare the vector type with GCC's
  //    extension, typedef float v8f __attribute__((vector_size(32))); + and * on it work on all
  //    8 lanes, and a float operand is broadcast (sum += a_value * b_vector). With -march=native
  //    it becomes AVX2 multiply-adds; elsewhere it still compiles. Each step p of the inner loop
  //    loads 16 floats of B's row p (two vectors) and, for each of the 6 rows, one float of A,
  //    and does 12 vector multiply-adds. Load and store vectors with std::memcpy.
  // 2. Packing: copy a panel of B (KC rows × NR columns, row after row) and a block of A (MC rows
  //    × KC columns, stored as panels of MR rows, column after column) into contiguous buffers
  //    before the micro-kernel reads them, so that it walks memory strictly front to back.
  //    Sizes such as KC = 256, MC = 96, NC = 2048 keep a B panel in L1 and the A block in L2.
  // 3. Loops: for each block of NC columns, for each block of KC inner values: pack B; for each
  //    block of MC rows: pack A, then run the micro-kernel on every MR × NR block of C, ADDING
  //    into C (the KC blocks are partial sums).
  // 4. Edges: sizes need not be multiples of MR, NR or the cache blocks. Round the number of
  //    panels up, pad the packed copies with zeros, and store only the rows and columns of an
  //    edge block that lie inside C.
  // Same ShapeError as vectorized_matmul; views: call contiguous() first.
  throw kiln::NotImplemented();
}

Tensor fused_gelu(const Tensor& x) {
  // GELU(x) ≈ 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), √(2/π) ≈ 0.7978845608.
  // Halve x first, as written: x·(1 + tanh(u)) overflows for x above FLT_MAX/2 ≈ 1.7e38.
  // Write tanh(u) as 1 − 2/(e^(2u) + 1), as unfused_gelu does, so the bench measures the fusion.
  // One pass: read each element once, compute the whole formula in local variables, write the
  // result once. No temporary tensors. x may be a view (call contiguous() and read data()); the
  // result has x's shape and its own storage (on a contiguous x, contiguous() is x itself: write
  // into a vector of your own, not into its data()).
  throw kiln::NotImplemented();
}

Tensor im2col(const Tensor& x, int kernel_size, int stride, int padding) {
  // x (N, C, H, W) to cols (N·out_h·out_w, C·k·k), zeros where a window hangs over the padding.
  // Loop in Caffe's order: n, c, kh, kw, then oh, ow. The input pixel is
  // (ih, iw) = (oh·stride - padding + kh, ow·stride - padding + kw); skip it when it lies outside
  // [0, H) × [0, W). Its column is (c·k + kh)·k + kw, its row (n·out_h + oh)·out_w + ow.
  // Example: the 3×3 image 1..9 with k = 2 gives [[1,2,4,5], [2,3,5,6], [4,5,7,8], [5,6,8,9]].
  // ShapeError when x is not 4-D or the k×k window does not fit into the padded image.
  throw kiln::NotImplemented();
}

Tensor col2im(const Tensor& cols, const Shape& x_shape, int kernel_size, int stride, int padding) {
  // The reverse walk of im2col: start from zeros of x_shape and, for every entry of cols, ADD
  // (+=) it to the pixel it was read from; entries that came from the padding are dropped.
  // Pixels covered by several windows collect several values: col2im of ones (4, 4) into
  // (1, 1, 3, 3) with k = 2 is [[1,2,1], [2,4,2], [1,2,1]].
  // First refuse the window as im2col does (the same errors, the same check); then ShapeError
  // when cols is not (N·out_h·out_w, C·k·k) for x_shape.
  throw kiln::NotImplemented();
}

Tensor im2col_conv2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, int stride,
                     int padding) {
  // 1. cols = im2col(x, k, stride, padding)                    (N·out_h·out_w, C·k·k)
  // 2. the weight flattened to (out_ch, C·k·k), then transposed (C·k·k, out_ch)
  // 3. rows = vectorized_matmul(cols, that)                       (N·out_h·out_w, out_ch)
  // 4. add the bias, if any, to every row (broadcast a (1, out_ch) view)
  // 5. rows is laid out (N, out_h, out_w, out_ch): reshape to that, then move out_ch to the
  //    second place with transposes, (N, out_ch, out_h, out_w), and make it contiguous.
  // ShapeError when x is not 4-D, the weight is not (out_ch, C, k, k) with x's C, or the bias is
  // not (out_ch).
  throw kiln::NotImplemented();
}

Tensor Im2colConv2dFunction::forward() {
  // inputs[0] is x, inputs[1] the weight, inputs[2] the bias when there is one. Compute the same
  // output as im2col_conv2d, and keep the patch matrix in the member `cols` for backward().
  throw kiln::NotImplemented();
}

std::vector<Tensor> Im2colConv2dFunction::backward(const Tensor& grad_output) {
  // grad_output is (N, out_ch, out_h, out_w). Move it to (N, out_h, out_w, out_ch) with
  // transposes, then reshape to G (N·out_h·out_w, out_ch): the layout of the forward product.
  //   weight gradient: colsᵀ·G is (C·k·k, out_ch); transpose it to (out_ch, C·k·k), then
  //                    reshape to (out_ch, C, k, k)
  //   input gradient:  G·(weight as (out_ch, C·k·k)) is (N·out_h·out_w, C·k·k); col2im it
  //                    back to x's shape with the same k, stride and padding
  //   bias gradient:   G summed over its rows, (out_ch)
  // Return {input, weight} gradients, or {input, weight, bias} when there are three inputs.
  throw kiln::NotImplemented();
}

}  // namespace kiln
