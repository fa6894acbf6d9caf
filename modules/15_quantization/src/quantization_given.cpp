// Given: the size of a float32 tensor, to set beside weight_bytes.
#include "kiln/quantization.h"

namespace kiln::quant {

std::int64_t float_bytes(const Tensor& t) { return t.numel() * static_cast<std::int64_t>(sizeof(float)); }

}  // namespace kiln::quant
