// A Linear layer with int8 weights and int8 inputs, its bias kept in float.
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

QuantizedLinear::QuantizedLinear(const nn::Linear& layer, float input_scale) {
  // in_features, out_features and input_scale. layer.weight is (in, out): quantize its transpose,
  // (out, in), so that each output channel is a row with its own scale. bias: a new float tensor
  // holding layer.bias's values (Tensor(shape, layer.bias.to_vector())), so that it records no graph.
  throw kiln::NotImplemented();
}

Tensor QuantizedLinear::forward(const Tensor& x) const {
  // Quantize x (N, in) with input_scale, multiply with int8_matmul by the weight (out, in), add the
  // bias (out) to every row. Pass x on as it is (no reshape): a wrong x must reach the ShapeError
  // of quantize_activations or int8_accumulate.
  throw kiln::NotImplemented();
}

}  // namespace kiln::quant
