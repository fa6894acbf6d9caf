// The int8 matrix product: int8 codes multiplied and summed in int32, rescaled to float once.
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

std::vector<std::int32_t> int8_accumulate(const QuantizedTensor& x, const QuantizedWeight& w) {
  if (x.cols != w.cols) {
    throw ShapeError("int8_accumulate needs x (M, K) and w (N, K), got " + to_string(Shape{x.rows, x.cols}) + " and " +
                     to_string(Shape{w.rows, w.cols}));
  }
  const std::int64_t batch = x.rows, outputs = w.rows, inner = x.cols;
  // acc (M, N), row-major: acc[m·N + n] pairs row m of x with row n of w.
  std::vector<std::int32_t> acc(static_cast<std::size_t>(batch * outputs), 0);
  for (std::int64_t m = 0; m < batch; ++m) {
    const std::int8_t* x_row = x.codes.data() + m * inner;
    for (std::int64_t n = 0; n < outputs; ++n) {
      const std::int8_t* w_row = w.codes.data() + n * inner;
      std::int32_t total = 0;
      for (std::int64_t k = 0; k < inner; ++k) total += static_cast<std::int32_t>(x_row[k]) * static_cast<std::int32_t>(w_row[k]);
      acc[static_cast<std::size_t>(m * outputs + n)] = total;
    }
  }
  return acc;
}

Tensor int8_matmul(const QuantizedTensor& x, const QuantizedWeight& w) {
  const std::vector<std::int32_t> acc = int8_accumulate(x, w);
  const std::int64_t batch = x.rows, outputs = w.rows;
  // y (M, N), row-major: one float multiply per output turns the integer sum back into a value.
  std::vector<float> y(acc.size());
  for (std::int64_t m = 0; m < batch; ++m) {
    for (std::int64_t n = 0; n < outputs; ++n) {
      const auto at = static_cast<std::size_t>(m * outputs + n);
      y[at] = x.scale * w.scales[static_cast<std::size_t>(n)] * static_cast<float>(acc[at]);
    }
  }
  return Tensor({batch, outputs}, std::move(y));
}

}  // namespace kiln::quant
