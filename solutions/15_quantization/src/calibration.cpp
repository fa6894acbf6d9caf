// Calibration: the running largest magnitude of the activations, and per-tensor codes from it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

void ActivationObserver::update(const Tensor& batch) {
  for (const float v : batch.to_vector()) max_abs_ = std::max(max_abs_, std::fabs(v));
}

float ActivationObserver::scale() const {
  // Nothing but zeros seen: every code is 0 whatever the scale; 1 keeps it positive.
  return max_abs_ > 0.0f ? max_abs_ / max_code : 1.0f;
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
