// The int8 matrix product: int8 codes multiplied and summed in int32, rescaled to float once.
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

std::vector<std::int32_t> int8_accumulate(const QuantizedTensor& x, const QuantizedWeight& w) {
  // ShapeError naming both shapes, to_string(Shape{x.rows, x.cols}) and to_string(Shape{w.rows,
  // w.cols}), when x.cols != w.cols. Then acc (M, N), row-major:
  //   acc[m·N + n] = Σ_k x.codes[m·K + k] · w.codes[n·K + k]
  // Widen each code to std::int32_t BEFORE multiplying, and keep the sum in std::int32_t.
  // Always M·N sums: K = 0 gives M·N zeros (empty sums), M = 0 or N = 0 none.
  throw kiln::NotImplemented();
}

Tensor int8_matmul(const QuantizedTensor& x, const QuantizedWeight& w) {
  // acc = int8_accumulate(x, w); y (M, N) with y[m, n] = x.scale · w.scales[n] · acc[m·N + n],
  // the two scales multiplied first (one scale times the sum can overflow where y does not).
  throw kiln::NotImplemented();
}

}  // namespace kiln::quant
