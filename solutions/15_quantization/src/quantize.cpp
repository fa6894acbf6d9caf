// Per-channel int8 weights: one scale per output row, codes rounded half away from zero.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

std::int8_t quantize_value(float value, float scale) {
  // std::round sends a half away from zero: 2.5 -> 3, -2.5 -> -3.
  const float rounded = std::round(value / scale);
  const float clamped = std::clamp(rounded, -static_cast<float>(max_code), static_cast<float>(max_code));
  return static_cast<std::int8_t>(clamped);
}

QuantizedWeight quantize_per_channel(const Tensor& weight) {
  if (weight.dim() != 2) throw ShapeError("quantize_per_channel needs a (rows, cols) weight, got " + to_string(weight.shape()));
  QuantizedWeight q;
  q.rows = weight.shape()[0];
  q.cols = weight.shape()[1];
  const std::vector<float> values = weight.to_vector();  // (rows, cols), row-major, read through the strides
  q.codes.resize(values.size());
  q.scales.resize(static_cast<std::size_t>(q.rows));
  for (std::int64_t r = 0; r < q.rows; ++r) {
    const float* row = values.data() + r * q.cols;
    float largest = 0.0f;
    for (std::int64_t c = 0; c < q.cols; ++c) largest = std::max(largest, std::fabs(row[c]));
    // A row of zeros: any scale gives code 0; 1 keeps every scale positive. Below about 8.9e-44
    // (subnormal), largest/127 rounds to 0 in float: the smallest positive float keeps the scale
    // positive and the codes steps of it ([1.4e-45] gets scale 1.4e-45 and code 1). Any other
    // quotient is at least that already, so this is no lower bound.
    const float scale = largest > 0.0f ? std::max(largest / max_code, std::numeric_limits<float>::denorm_min()) : 1.0f;
    q.scales[static_cast<std::size_t>(r)] = scale;
    for (std::int64_t c = 0; c < q.cols; ++c) q.codes[static_cast<std::size_t>(r * q.cols + c)] = quantize_value(row[c], scale);
  }
  return q;
}

Tensor dequantize(const QuantizedWeight& q) {
  std::vector<float> values(q.codes.size());
  for (std::int64_t r = 0; r < q.rows; ++r) {
    const float scale = q.scales[static_cast<std::size_t>(r)];
    for (std::int64_t c = 0; c < q.cols; ++c) {
      const auto at = static_cast<std::size_t>(r * q.cols + c);
      values[at] = static_cast<float>(q.codes[at]) * scale;
    }
  }
  return Tensor({q.rows, q.cols}, std::move(values));
}

std::int64_t weight_bytes(const QuantizedWeight& q) {
  const auto code_bytes = static_cast<std::int64_t>(q.codes.size() * sizeof(std::int8_t));
  const auto scale_bytes = static_cast<std::int64_t>(q.scales.size() * sizeof(float));
  return code_bytes + scale_bytes;
}

}  // namespace kiln::quant
