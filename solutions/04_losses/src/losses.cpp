// The elementwise losses: mean squared error and binary cross-entropy with logits.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/activations.h"
#include "kiln/losses.h"

namespace kiln {

namespace {

// Both tensors pair up element by element: equal shapes, not merely equal counts.
void check_same_shape(const char* name, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    throw ShapeError(std::string(name) + " needs two tensors of the same shape, got " + to_string(a.shape()) +
                     " and " + to_string(b.shape()));
  }
}

}  // namespace

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  check_same_shape("mse_loss", prediction, target);
  const std::vector<float> p = prediction.to_vector(), t = target.to_vector();
  double total = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double error = static_cast<double>(p[i]) - t[i];
    total += error * error;
  }
  return Tensor::scalar(static_cast<float>(total / static_cast<double>(p.size())));
}

Tensor mse_loss_backward(const Tensor& prediction, const Tensor& target) {
  check_same_shape("mse_loss_backward", prediction, target);
  const std::vector<float> p = prediction.to_vector(), t = target.to_vector();
  const double n = static_cast<double>(p.size());
  std::vector<float> grad(p.size());
  // Each element in double, rounded to float once: in float, p - t overflows for 3e38 against
  // -3e38 (whose gradient with n = 4, 3e38, is a float), and scaling p and t by 2/n before
  // subtracting would leave only their roundings of a small error between large values.
  for (std::size_t i = 0; i < p.size(); ++i) grad[i] = static_cast<float>(2.0 * (static_cast<double>(p[i]) - t[i]) / n);
  return Tensor(prediction.shape(), std::move(grad));
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets) {
  check_same_shape("binary_cross_entropy_with_logits", logits, targets);
  const std::vector<float> z = logits.to_vector(), t = targets.to_vector();
  double total = 0.0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    // -[t·log σ(z) + (1 - t)·log(1 - σ(z))], rearranged so that no exp or log can overflow:
    // e^(-|z|) is in (0, 1], and log1p keeps its precision when that is tiny.
    total += std::max(z[i], 0.0f) - z[i] * t[i] + std::log1p(std::exp(-std::fabs(z[i])));
  }
  return Tensor::scalar(static_cast<float>(total / static_cast<double>(z.size())));
}

Tensor binary_cross_entropy_with_logits_backward(const Tensor& logits, const Tensor& targets) {
  check_same_shape("binary_cross_entropy_with_logits_backward", logits, targets);
  std::vector<float> grad = sigmoid(logits).to_vector();  // module 02's stable sigmoid
  const std::vector<float> t = targets.to_vector();
  const float scale = 1.0f / static_cast<float>(grad.size());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = (grad[i] - t[i]) * scale;
  return Tensor(logits.shape(), std::move(grad));
}

}  // namespace kiln
