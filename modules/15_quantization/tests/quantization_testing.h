// Trusted code the module 15 checks share: symmetric int8 quantization written out again, in
// double where it can be, and the inputs' preparation. Nothing here calls the module's functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/quantization.h"
#include "kiln/testing.h"

namespace kiln::quant_testing {

using testing::TensorData;

inline std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// round(v), half away from zero, clamped to [-127, 127].
inline std::int64_t trusted_code(double value_over_scale) {
  const double rounded = value_over_scale >= 0 ? std::floor(value_over_scale + 0.5) : -std::floor(-value_over_scale + 0.5);
  return static_cast<std::int64_t>(std::clamp(rounded, -127.0, 127.0));
}

// The scale of a range whose largest magnitude is `largest`: largest/127 in float, 1 for 0, and
// the smallest positive float where the quotient rounds to 0 (largest below about 8.9e-44).
inline float trusted_scale(float largest) {
  if (largest == 0.0f) return 1.0f;
  const float quotient = largest / 127.0f;
  return quotient > 0.0f ? quotient : std::numeric_limits<float>::denorm_min();
}

// The largest |v| of values[begin, begin + count·step) taken `step` apart.
inline float largest_magnitude(const std::vector<float>& values, std::int64_t begin, std::int64_t count, std::int64_t step) {
  float largest = 0.0f;
  for (std::int64_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(values[at(begin + i * step)]));
  return largest;
}

// Moves every value whose quotient by `scale` lies within 0.001 of a half (x.5) 0.01 of a step
// towards zero, so that dividing in float or in double, or by a scale one rounding away, cannot
// send it to the other neighbour. Values of magnitude 127·scale or more are left alone (they clamp).
inline void away_from_ties(std::vector<float>& values, std::int64_t begin, std::int64_t count, std::int64_t step,
                           float scale) {
  for (std::int64_t i = 0; i < count; ++i) {
    float& v = values[at(begin + i * step)];
    const double quotient = std::fabs(static_cast<double>(v) / scale);
    if (quotient >= 126.9) continue;
    if (std::fabs(quotient - std::floor(quotient) - 0.5) < 1e-3) v -= std::copysign(0.01f * scale, v);
  }
}

// A random (rows, cols) weight of the run, with no value near a tie of its row's scale.
inline Tensor tie_free_weight(std::int64_t rows, std::int64_t cols, std::uint64_t stream, float low = -1.0f,
                              float high = 1.0f) {
  std::vector<float> values = testing::data_of(testing::random_tensor({rows, cols}, stream, low, high)).values;
  for (std::int64_t r = 0; r < rows; ++r)
    away_from_ties(values, r * cols, cols, 1, trusted_scale(largest_magnitude(values, r * cols, cols, 1)));
  return Tensor({rows, cols}, values);
}

// Plain per-channel quantization of weight (rows, cols): codes and scales.
struct Quantized {
  std::vector<std::int64_t> codes;  // (rows, cols), row-major
  std::vector<float> scales;        // (rows)
};

inline Quantized trusted_quantize(const TensorData& weight) {
  const std::int64_t rows = weight.shape[0], cols = weight.shape[1];
  Quantized q;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float scale = trusted_scale(largest_magnitude(weight.values, r * cols, cols, 1));
    q.scales.push_back(scale);
    for (std::int64_t c = 0; c < cols; ++c)
      q.codes.push_back(trusted_code(static_cast<double>(weight.values[at(r * cols + c)]) / scale));
  }
  return q;
}

// A QuantizedWeight, QuantizedTensor and the observation of either, as plain data.
using WeightParts = std::tuple<std::vector<std::int8_t>, std::vector<float>, std::int64_t, std::int64_t>;
inline WeightParts parts_of(const quant::QuantizedWeight& q) { return {q.codes, q.scales, q.rows, q.cols}; }
using ObservedWeight = testing::Plain<WeightParts>::type;

using TensorParts = std::tuple<std::vector<std::int8_t>, float, std::int64_t, std::int64_t>;
inline TensorParts parts_of(const quant::QuantizedTensor& q) { return {q.codes, q.scale, q.rows, q.cols}; }
using ObservedTensor = testing::Plain<TensorParts>::type;

// Trusted structs built from plain codes (inputs of the test, never student results).
inline quant::QuantizedWeight weight_of(std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& codes,
                                        const std::vector<float>& scales) {
  quant::QuantizedWeight q;
  q.rows = rows;
  q.cols = cols;
  for (const std::int64_t c : codes) q.codes.push_back(static_cast<std::int8_t>(c));
  q.scales = scales;
  return q;
}

inline quant::QuantizedTensor tensor_of(std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& codes,
                                        float scale) {
  quant::QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  for (const std::int64_t c : codes) q.codes.push_back(static_cast<std::int8_t>(c));
  q.scale = scale;
  return q;
}

// count codes of the run in [-127, 127].
inline std::vector<std::int64_t> random_codes(std::int64_t count, std::uint64_t stream) {
  return testing::random_ints(at(count), -127, 128, stream);
}

// The (rows, cols) transpose of `m` (cols, rows) as a view, built with the given make_view.
inline Tensor transposed_view(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

// The values of a (rows, cols) matrix stored transposed: a (cols, rows) contiguous tensor.
inline Tensor stored_transposed(const std::vector<float>& values, std::int64_t rows, std::int64_t cols) {
  std::vector<float> out(values.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) out[at(c * rows + r)] = values[at(r * cols + c)];
  return Tensor({cols, rows}, out);
}

inline std::string shape_text(std::int64_t rows, std::int64_t cols) { return fmt::format("({}, {})", rows, cols); }

}  // namespace kiln::quant_testing
