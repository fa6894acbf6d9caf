// zero_grad, and stochastic gradient descent with momentum, Nesterov momentum and weight decay.
#include <cstdint>
#include <vector>

#include "kiln/optimizers.h"

namespace kiln::optim {

void Optimizer::zero_grad() {
  for (Tensor& parameter : parameters_) parameter.zero_grad();
}

void SGD::step() {
  const float lr = learning_rate();
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    Tensor& parameter = parameters_[k];
    if (!autograd::has_grad(parameter)) continue;  // no gradient: leave the value and its state alone
    const Tensor gradient = parameter.grad().contiguous();
    const float* g = gradient.data();
    float* p = parameter.data();  // the shared storage: every handle to the parameter sees the update
    const std::int64_t n = parameter.numel();
    std::vector<float>& buffer = momentum_buffers_[k];
    const bool first_step = buffer.empty();
    if (momentum_ != 0.0f && first_step) buffer.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      float d = g[i] + weight_decay_ * p[i];
      if (momentum_ != 0.0f) {
        buffer[i] = first_step ? d : momentum_ * buffer[i] + d;
        d = nesterov_ ? d + momentum_ * buffer[i] : buffer[i];
      }
      p[i] -= lr * d;
    }
  }
}

}  // namespace kiln::optim
