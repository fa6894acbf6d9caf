// The elementwise activations and their backward passes.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "kiln/activations.h"

namespace kiln {

namespace {

// A backward pass pairs each element of its first tensor with the same element of grad_output:
// the two shapes must be equal, not merely hold as many elements.
void check_same_shape(const char* name, const Tensor& a, const Tensor& grad_output) {
  if (a.shape() != grad_output.shape()) {
    throw ShapeError(std::string(name) + " needs grad_output of its input's shape, got " + to_string(a.shape()) +
                     " and " + to_string(grad_output.shape()));
  }
}

float stable_sigmoid(float x) {
  // e^(-|x|) is in (0, 1]: it cannot overflow, whatever x is.
  const float e = std::exp(-std::fabs(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

constexpr float kInvSqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);                           // 1/√2
constexpr float kInvSqrt2Pi = static_cast<float>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);  // 1/√(2π)
constexpr float kSqrt2OverPi = static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // √(2/π)

// Φ(x), the standard normal distribution function.
float normal_cdf(float x) { return 0.5f * (1.0f + std::erf(x * kInvSqrt2)); }

}  // namespace

Tensor relu(const Tensor& x) {
  std::vector<float> y = x.to_vector();
  for (float& v : y) v = v > 0.0f ? v : 0.0f;
  return Tensor(x.shape(), std::move(y));
}

Tensor relu_backward(const Tensor& x, const Tensor& grad_output) {
  check_same_shape("relu_backward", x, grad_output);
  const std::vector<float> inputs = x.to_vector();
  std::vector<float> grad = grad_output.to_vector();
  for (std::size_t i = 0; i < grad.size(); ++i) {
    if (!(inputs[i] > 0.0f)) grad[i] = 0.0f;
  }
  return Tensor(x.shape(), std::move(grad));
}

Tensor sigmoid(const Tensor& x) {
  std::vector<float> y = x.to_vector();
  for (float& v : y) v = stable_sigmoid(v);
  return Tensor(x.shape(), std::move(y));
}

Tensor sigmoid_backward(const Tensor& y, const Tensor& grad_output) {
  check_same_shape("sigmoid_backward", y, grad_output);
  const std::vector<float> outputs = y.to_vector();
  std::vector<float> grad = grad_output.to_vector();
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] *= outputs[i] * (1.0f - outputs[i]);
  return Tensor(y.shape(), std::move(grad));
}

Tensor tanh_activation(const Tensor& x) {
  std::vector<float> y = x.to_vector();
  for (float& v : y) v = std::tanh(v);
  return Tensor(x.shape(), std::move(y));
}

Tensor tanh_backward(const Tensor& y, const Tensor& grad_output) {
  check_same_shape("tanh_backward", y, grad_output);
  const std::vector<float> outputs = y.to_vector();
  std::vector<float> grad = grad_output.to_vector();
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] *= 1.0f - outputs[i] * outputs[i];
  return Tensor(y.shape(), std::move(grad));
}

Tensor gelu(const Tensor& x) {
  std::vector<float> y = x.to_vector();
  for (float& v : y) v = v * normal_cdf(v);
  return Tensor(x.shape(), std::move(y));
}

Tensor gelu_tanh(const Tensor& x) {
  std::vector<float> y = x.to_vector();
  for (float& v : y) v = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
  return Tensor(x.shape(), std::move(y));
}

Tensor gelu_backward(const Tensor& x, const Tensor& grad_output) {
  check_same_shape("gelu_backward", x, grad_output);
  const std::vector<float> inputs = x.to_vector();
  std::vector<float> grad = grad_output.to_vector();
  for (std::size_t i = 0; i < grad.size(); ++i) {
    const float v = inputs[i];
    const float density = kInvSqrt2Pi * std::exp(-0.5f * v * v);  // φ(v)
    grad[i] *= normal_cdf(v) + v * density;
  }
  return Tensor(x.shape(), std::move(grad));
}

}  // namespace kiln
