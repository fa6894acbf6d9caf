// Module 15, Quantization: int8 weights with one scale per output channel, activations calibrated
// to one scale per tensor, a matrix product accumulated in int32, and a Linear layer built on them.
//
// Symmetric int8 quantization. A real value v and its code q are tied by one positive scale s:
//   q = clamp(round(v / s), -127, 127)      round half away from zero: 2.5 -> 3, -2.5 -> -3
//   v ≈ q·s                                 (dequantization)
// The codes are symmetric about zero (-128 is never used), so zero is exactly code 0 and the
// largest magnitude the scale was chosen for, 127·s, is code ±127 (so wherever s is a normal
// float; where s is subnormal, a largest magnitude below about 1.5e-36, s has few bits and the
// largest magnitude can fall short of 127·s or pass it: 64·1.4e-45 gets s = 1.4e-45 and code 64,
// and 150·1.4e-45 the same s and code 127, clamped).
// Inside that range |v - q·s| ≤ s/2: rounding moves a value by at most half a step.
//
// Layouts, all row-major:
//   QuantizedWeight   codes (rows, cols) int8 and scales (rows) float32: row r holds the weights
//                     of output channel r, codes[r·cols + c] ≈ weight[r, c] / scales[r]
//   QuantizedTensor   codes (rows, cols) int8 and one float32 scale for the whole tensor:
//                     codes[m·cols + k] ≈ x[m, k] / scale
//   int8_matmul       x (M, K) times w (N, K), both int8, gives y (M, N) float32:
//                       y[m, n] = x.scale · w.scales[n] · Σ_k x.codes[m·K + k] · w.codes[n·K + k]
//                     (w is stored with one ROW per output, so the product is x·wᵀ, as PyTorch
//                     stores its weights; module 08's Linear keeps (in, out), its transpose)
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/training.h"

namespace kiln::quant {

// The largest code: int8 runs from -128 to 127, and the symmetric scheme uses -127 .. 127.
constexpr int max_code = 127;

// Weights quantized per output channel: one scale per row.
struct QuantizedWeight {
  std::vector<std::int8_t> codes;  // (rows, cols), row-major
  std::vector<float> scales;       // (rows): the scale of each row
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

// Activations quantized per tensor: one scale for every value.
struct QuantizedTensor {
  std::vector<std::int8_t> codes;  // (rows, cols), row-major
  float scale = 1.0f;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

// ---------------------------------------------------------------------------------------------
// Given (src/quantization_given.cpp)

// The bytes a float32 tensor takes: numel · 4.
std::int64_t float_bytes(const Tensor& t);

// ---------------------------------------------------------------------------------------------
// Weights (yours: src/quantize.cpp)

// The code of one value: round(value / scale), half away from zero (std::round does that), then
// clamped to [-127, 127]. scale > 0. Divide in float: value / scale.
std::int8_t quantize_value(float value, float scale);

// Per-channel symmetric quantization of weight (rows, cols), views included: for every row r,
//   scales[r] = max_c |weight[r, c]| / 127       (in float; a row of zeros gets scale 1)
//   codes[r·cols + c] = quantize_value(weight[r, c], scales[r])   (clamped to ±127, like every code)
// A row of zeros has all-zero codes whatever its scale; scale 1 keeps every scale positive, so
// that nothing ever divides by zero. For the same reason, where max/127 rounds to 0 in float (a
// largest magnitude below about 8.9e-44, subnormal), the scale is the smallest positive float,
// std::numeric_limits<float>::denorm_min() = 1.4e-45: a row [1.4e-45] gets scale 1.4e-45 and
// code 1. A subnormal scale is a whole number of those steps and can round down a long way, so
// w/scale can pass 127 there and the clamp matters: [150·1.4e-45] gets scale 1.4e-45 (150/127
// rounds to 1 step) and code 127. That is no lower bound, since every other quotient is at least that already: a row
// [1e-6, -4e-7] gets scale 1e-6/127 = 7.874e-9 and codes [127, -51]. A weight of no columns,
// (rows, 0), has rows of no values: the largest of nothing is 0, so each gets scale 1, and there
// are no codes. Throws ShapeError naming the shape when weight is not 2-D.
// A contiguous view at an offset (a slice of a larger tensor) is read from data(), where its
// values start, not from storage_data(), the storage's first float.
QuantizedWeight quantize_per_channel(const Tensor& weight);

// The float tensor the codes stand for: (rows, cols), element [r, c] = codes[r·cols + c]·scales[r].
// For every weight w of row r, |w - dequantize(quantize_per_channel(w))| ≤ scales[r]/2.
Tensor dequantize(const QuantizedWeight& q);

// The bytes q's storage takes: one per code and four per scale, rows·cols + 4·rows. A float32
// weight of the same shape takes 4·rows·cols (float_bytes): a quarter, plus the scales.
std::int64_t weight_bytes(const QuantizedWeight& q);

// ---------------------------------------------------------------------------------------------
// Calibration (yours: src/calibration.cpp)

// Sees batches of activations and keeps the largest magnitude among all of them: the range the
// activation scale must cover.
class ActivationObserver {
 public:
  // max_abs = max(max_abs, |x| for every element of batch). Any shape, views included (read
  // through the strides). An empty batch changes nothing.
  void update(const Tensor& batch);

  // max_abs / 127 (in float): the scale that maps the largest magnitude seen to code 127, however
  // small (no floor at float's epsilon: max_abs 1e-6 gives 7.874e-9). 1 while max_abs is 0
  // (nothing seen yet, or only zeros). Where max_abs/127 rounds to 0 in float (max_abs below
  // about 8.9e-44, subnormal), the smallest positive float, std::numeric_limits<float>::
  // denorm_min() = 1.4e-45, so that the scale stays positive: [[1.4e-45]] gives 1.4e-45.
  // The scale is the quotient max_abs / 127 in float, bit for bit: divided, not multiplied by
  // 1/127, whose product rounds twice and is one bit off for some max_abs (2.25, 3.25, 13).
  float scale() const;

  // Given: the largest magnitude seen so far, 0 before any batch.
  float max_abs() const { return max_abs_; }

 private:
  float max_abs_ = 0.0f;
};

// Per-tensor quantization of x (rows, cols) with a calibrated scale (> 0): codes[m·cols + k] =
// quantize_value(x[m, k], scale). Values beyond ±127·scale, outside the calibrated range, clamp
// to ±127. Views included. Throws ShapeError naming the shape when x is not 2-D.
// A contiguous view at an offset (a slice of a larger tensor) is read from data(), where its
// values start, not from storage_data(), the storage's first float.
QuantizedTensor quantize_activations(const Tensor& x, float scale);

// ---------------------------------------------------------------------------------------------
// The int8 product (yours: src/int8_matmul.cpp)

// The int32 sums of x (M, K) and w (N, K): acc[m·N + n] = Σ_k x.codes[m·K + k]·w.codes[n·K + k],
// each product and each sum in std::int32_t. Exact: |acc| ≤ 127²·K, which int32 holds for K up to
// 133,144. Always M·N sums: K = 0 gives M·N zeros (empty sums), M = 0 or N = 0 none. Throws
// ShapeError naming both shapes, "(M, K)" and "(N, K')", when K ≠ K'.
std::vector<std::int32_t> int8_accumulate(const QuantizedTensor& x, const QuantizedWeight& w);

// y (M, N) float32: y[m, n] = x.scale · w.scales[n] · acc[m·N + n], the sums of int8_accumulate
// rescaled to real values, the two scales multiplied first, as written: their product (one step
// of y) is in range wherever y is, while one scale times the sum can overflow (x.scale 1e36,
// w.scales[n] 0.01 and acc 16129 give 1.6129e38, where 1e36·16129 is inf). The same ShapeError
// when the inner sizes differ.
Tensor int8_matmul(const QuantizedTensor& x, const QuantizedWeight& w);

// ---------------------------------------------------------------------------------------------
// The quantized layer (yours: src/quantized_linear.cpp)

// A Linear layer whose weight is int8 and whose input is quantized on the way in; the bias stays
// float32 (it is small, and adding it costs nothing).
class QuantizedLinear {
 public:
  // From a trained module 08 Linear, weight (in, out) and bias (out), and the scale calibrated
  // for its inputs (> 0):
  //   weight = quantize_per_channel(layer.weight transposed): (out, in), one scale per output
  //   bias   = a float32 copy of layer.bias (out), contiguous and recording no graph
  QuantizedLinear(const nn::Linear& layer, float input_scale);

  // x (N, in) float32 -> y (N, out) = int8_matmul(quantize_activations(x, input_scale), weight)
  // + bias, the bias added to every row. x is taken as it is, never reshaped into rows: a wrong
  // x raises ShapeError naming its shape, int8_accumulate's for a width other than in (x (2, 4)
  // of a layer of 2 inputs too) and quantize_activations' for an x that is not 2-D.
  Tensor forward(const Tensor& x) const;

  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  float input_scale = 1.0f;
  QuantizedWeight weight;  // (out_features, in_features)
  Tensor bias;             // (out_features)
};

}  // namespace kiln::quant
