// Calibration: the running largest magnitude of the activations, and per-tensor codes from it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

void ActivationObserver::update(const Tensor& batch) {
  // max_abs_ = the larger of max_abs_ and every |value| of the batch (read through the strides).
  // Keep the largest of ALL batches seen, not only this one's; a negative value counts by its size.
  throw kiln::NotImplemented();
}

float ActivationObserver::scale() const {
  // max_abs_ / max_code, or 1 while max_abs_ is 0. No floor: a tiny max_abs_ gives a tiny scale;
  // only where the quotient rounds to 0 in float (max_abs_ below about 8.9e-44), the smallest
  // positive float, std::numeric_limits<float>::denorm_min() = 1.4e-45, so that it stays positive.
  // The scale is the quotient max_abs / 127 in float, bit for bit: divided, not multiplied by
  // 1/127, whose product rounds twice and is one bit off for some max_abs (2.25, 3.25, 13).
  throw kiln::NotImplemented();
}

QuantizedTensor quantize_activations(const Tensor& x, float scale) {
  // ShapeError naming the shape unless x is 2-D. rows, cols, scale; then
  // codes[m·cols + k] = quantize_value(x[m, k], scale), which clamps what lies beyond the range.
  // A contiguous view at an offset (a slice of a larger tensor) is read from data(), where its
  // values start, not from storage_data(), the storage's first float.
  throw kiln::NotImplemented();
}

}  // namespace kiln::quant
