// The Linear layer: Kaiming initialisation, y = x·W + b, and its backward pass by hand.
#include <cmath>
#include <optional>
#include <vector>

#include "kiln/layers.h"

namespace kiln {

Linear::Linear(int in_features, int out_features, bool bias, WichmannHill& generator)
    : in_features(in_features), out_features(out_features) {
  // Kaiming uniform: variance bound²/3 = 2/in_features keeps the activations' spread steady
  // through a stack of ReLU layers.
  const double bound = std::sqrt(6.0 / in_features);
  // weight (in_features, out_features), drawn in row-major order.
  std::vector<float> weights(static_cast<std::size_t>(in_features) * out_features);
  for (float& w : weights) w = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
  weight = Tensor({in_features, out_features}, std::move(weights));
  this->bias = bias ? Tensor::zeros({out_features}) : Tensor(Shape{0}, {});
  zero_grad();
}

Tensor linear_forward(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  // blas_matmul checks the shapes and names both when they do not fit.
  const Tensor y = blas_matmul(x, weight);  // (N, in)·(in, out) = (N, out)
  if (bias) return y + *bias;               // (out) broadcasts over the N rows
  return y;
}

LinearGradients linear_backward(const Tensor& x, const Tensor& weight, const Tensor& grad_output,
                                bool has_bias) {
  // G = grad_output (N, out); y[n, o] = Σ_i x[n, i]·W[i, o] + b[o].
  LinearGradients grads;
  grads.input = blas_matmul(grad_output, weight.transpose(0, 1));  // G·Wᵀ: (N, out)·(out, in) = (N, in)
  grads.weight = blas_matmul(x.transpose(0, 1), grad_output);      // xᵀ·G: (in, N)·(N, out) = (in, out)
  grads.bias = has_bias ? grad_output.sum(0) : Tensor(Shape{0}, {});  // each row added b once
  return grads;
}

}  // namespace kiln
