// Calibration: the running largest magnitude of the activations, and per-tensor codes from it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

void ActivationObserver::update(const Tensor& batch) {
  for (const float v : batch.to_vector()) max_abs_ = std::max(max_abs_, std::fabs(v));
}

float ActivationObserver::scale() const {
  // Nothing but zeros seen: every code is 0 whatever the scale; 1 keeps it positive. Below about
  // 8.9e-44 (subnormal), max_abs_/127 rounds to 0 in float: the smallest positive float keeps the
  // scale positive. Any other quotient is at least that already, so this is no lower bound.
  return max_abs_ > 0.0f ? std::max(max_abs_ / max_code, std::numeric_limits<float>::denorm_min()) : 1.0f;
}

QuantizedTensor quantize_activations(const Tensor& x, float scale) {
  if (x.dim() != 2) throw ShapeError("quantize_activations needs a (rows, cols) tensor, got " + to_string(x.shape()));
  QuantizedTensor q;
  q.rows = x.shape()[0];
  q.cols = x.shape()[1];
  q.scale = scale;
  const std::vector<float> values = x.to_vector();  // (rows, cols), row-major
  q.codes.resize(values.size());
  // Values beyond ±127·scale clamp to ±127 in quantize_value.
  for (std::size_t i = 0; i < values.size(); ++i) q.codes[i] = quantize_value(values[i], scale);
  return q;
}

}  // namespace kiln::quant
