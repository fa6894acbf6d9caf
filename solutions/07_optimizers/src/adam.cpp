// Adam and AdamW: one update with bias-corrected running averages of the gradient and its square.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/optimizers.h"

namespace kiln::optim {

void Adam::update(bool decoupled_weight_decay) {
  const float lr = learning_rate();
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    Tensor& parameter = parameters_[k];
    if (!autograd::has_grad(parameter)) continue;  // no gradient: no step, and t does not advance
    const std::int64_t t = ++steps_[k];
    const double bias_correction1 = 1.0 - std::pow(static_cast<double>(beta1_), static_cast<double>(t));
    const double bias_correction2 = 1.0 - std::pow(static_cast<double>(beta2_), static_cast<double>(t));
    const Tensor gradient = parameter.grad().contiguous();
    const float* gradient_values = gradient.data();
    float* p = parameter.data();
    std::vector<float>& m = exp_avg_[k];
    std::vector<float>& v = exp_avg_sq_[k];
    for (std::int64_t i = 0; i < parameter.numel(); ++i) {
      float g = gradient_values[i];
      if (decoupled_weight_decay) {
        p[i] -= lr * weight_decay_ * p[i];  // AdamW: shrink the weight itself, on its old value
      } else {
        g += weight_decay_ * p[i];  // Adam: L2 decay, part of the gradient the averages see
      }
      m[i] = beta1_ * m[i] + (1.0f - beta1_) * g;
      v[i] = beta2_ * v[i] + (1.0f - beta2_) * g * g;
      const double m_hat = m[i] / bias_correction1;
      const double v_hat = v[i] / bias_correction2;
      p[i] -= static_cast<float>(lr * m_hat / (std::sqrt(v_hat) + eps_));
    }
  }
}

}  // namespace kiln::optim
