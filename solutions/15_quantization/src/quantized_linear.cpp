// A Linear layer with int8 weights and int8 inputs, its bias kept in float.
#include <vector>

#include "kiln/quantization.h"

namespace kiln::quant {

QuantizedLinear::QuantizedLinear(const nn::Linear& layer, float input_scale)
    : in_features(layer.in_features), out_features(layer.out_features), input_scale(input_scale) {
  // Module 08 keeps the weight (in, out); one scale per OUTPUT needs the outputs as rows: (out, in).
  weight = quantize_per_channel(layer.weight.transpose(0, 1));
  bias = Tensor({out_features}, layer.bias.to_vector());  // a plain copy: no graph, no gradient
}

Tensor QuantizedLinear::forward(const Tensor& x) const {
  const QuantizedTensor codes = quantize_activations(x, input_scale);  // (N, in)
  return int8_matmul(codes, weight) + bias;                            // (N, out), the bias on every row
}

}  // namespace kiln::quant
