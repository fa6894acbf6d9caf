// Per-channel int8 weights: one scale per output row, codes rounded half away from zero.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

std::int8_t quantize_value(float value, float scale) {
  // round(value / scale) with std::round (a half goes away from zero: 2.5 -> 3, -2.5 -> -3), then
  // clamp to [-max_code, max_code] before converting to std::int8_t.
  throw kiln::NotImplemented();
}

QuantizedWeight quantize_per_channel(const Tensor& weight) {
  // ShapeError naming the shape unless weight is 2-D. rows, cols from the shape; read the values
  // through the strides (to_vector() does). A contiguous view at an offset (a slice of a larger
  // tensor) is read from data(), where its values start, not from storage_data(), the storage's
  // first float. For each row r:
  //   largest = max |weight[r, c]|;  scales[r] = largest / max_code, or 1 when largest is 0
  //   (no lower bound otherwise: a tiny row keeps its tiny scale; only where largest / max_code
  //   rounds to 0 in float, below about 8.9e-44, the smallest positive float,
  //   std::numeric_limits<float>::denorm_min() = 1.4e-45, so that every scale is positive)
  //   codes[r·cols + c] = quantize_value(weight[r, c], scales[r]), its clamp to ±127 included:
  //   a subnormal scale can round down so far that w/scale passes 127 ([150·1.4e-45] gets scale
  //   1.4e-45 and code 127)
  throw kiln::NotImplemented();
}

Tensor dequantize(const QuantizedWeight& q) {
  // A new (rows, cols) tensor: element [r, c] = codes[r·cols + c] · scales[r].
  throw kiln::NotImplemented();
}

std::int64_t weight_bytes(const QuantizedWeight& q) {
  // One byte per code, four per scale.
  throw kiln::NotImplemented();
}

}  // namespace kiln::quant
