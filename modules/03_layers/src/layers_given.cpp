// Given: the row and column views the ladder walks, and the parts of Linear that only pass
// things on to your linear_forward and linear_backward.
#include <stdexcept>
#include <string>

#include "kiln/layers.h"

namespace kiln {

Tensor row(const Tensor& m, std::int64_t i) {
  if (m.dim() != 2) throw ShapeError("row() needs a matrix, got shape " + to_string(m.shape()));
  if (i < 0 || i >= m.shape()[0]) {
    throw IndexError("row " + std::to_string(i) + " of a matrix of shape " + to_string(m.shape()));
  }
  // Row i starts i rows into the matrix and steps along the columns.
  return make_view(m, {m.shape()[1]}, {m.strides()[1]}, m.offset() + i * m.strides()[0]);
}

Tensor column(const Tensor& m, std::int64_t j) {
  if (m.dim() != 2) throw ShapeError("column() needs a matrix, got shape " + to_string(m.shape()));
  if (j < 0 || j >= m.shape()[1]) {
    throw IndexError("column " + std::to_string(j) + " of a matrix of shape " + to_string(m.shape()));
  }
  // Column j starts j columns into the matrix and steps down the rows.
  return make_view(m, {m.shape()[0]}, {m.strides()[0]}, m.offset() + j * m.strides()[1]);
}

Linear::Linear(int in_features, int out_features, bool bias, std::uint64_t seed) {
  WichmannHill generator(seed);
  *this = Linear(in_features, out_features, bias, generator);
}

Tensor Linear::forward(const Tensor& x) {
  input_ = x;
  if (has_bias()) return linear_forward(x, weight, bias);
  return linear_forward(x, weight, std::nullopt);
}

Tensor Linear::backward(const Tensor& grad_output) {
  if (!input_) throw std::logic_error("Linear::backward() needs a forward() first");
  const LinearGradients grads = linear_backward(*input_, weight, grad_output, has_bias());
  weight_grad = weight_grad + grads.weight;
  if (has_bias()) bias_grad = bias_grad + grads.bias;
  return grads.input;
}

void Linear::zero_grad() {
  weight_grad = Tensor::zeros(weight.shape());
  bias_grad = Tensor::zeros(bias.shape());
}

}  // namespace kiln
