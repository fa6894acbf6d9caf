// Given: the parts of the optimizers that only store and check settings. Your code is in sgd.cpp
// (zero_grad and SGD::step), adam.cpp (Adam::update) and schedules.cpp.
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "kiln/optimizers.h"

namespace kiln::optim {

namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> parameters) : parameters_(std::move(parameters)) {
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    const Tensor& parameter = parameters_[k];
    const std::string which = "parameter " + std::to_string(k) + " of shape " + to_string(parameter.shape());
    require(parameter.requires_grad(),
            which + " does not require grad: call set_requires_grad() before building the optimizer");
    require(parameter.is_contiguous(), which + " is not contiguous: an optimizer updates contiguous tensors");
  }
}

void Optimizer::set_learning_rate(float learning_rate) {
  require(std::isfinite(learning_rate) && learning_rate >= 0.0f,
          "a learning rate must be finite and not negative, got " + std::to_string(learning_rate));
  learning_rate_ = learning_rate;
}

SGD::SGD(std::vector<Tensor> parameters, float learning_rate, float momentum, bool nesterov, float weight_decay)
    : Optimizer(std::move(parameters)), momentum_(momentum), nesterov_(nesterov), weight_decay_(weight_decay) {
  set_learning_rate(learning_rate);
  require(momentum >= 0.0f, "SGD: momentum must not be negative, got " + std::to_string(momentum));
  require(weight_decay >= 0.0f, "SGD: weight_decay must not be negative, got " + std::to_string(weight_decay));
  require(!nesterov || momentum > 0.0f, "SGD: Nesterov momentum needs a momentum above 0");
  momentum_buffers_.resize(parameters_.size());  // all empty: no parameter has stepped yet
}

Adam::Adam(std::vector<Tensor> parameters, float learning_rate, float beta1, float beta2, float eps,
           float weight_decay)
    : Optimizer(std::move(parameters)), beta1_(beta1), beta2_(beta2), eps_(eps), weight_decay_(weight_decay) {
  set_learning_rate(learning_rate);
  require(beta1 >= 0.0f && beta1 < 1.0f, "Adam: beta1 must lie in [0, 1), got " + std::to_string(beta1));
  require(beta2 >= 0.0f && beta2 < 1.0f, "Adam: beta2 must lie in [0, 1), got " + std::to_string(beta2));
  require(eps >= 0.0f, "Adam: eps must not be negative, got " + std::to_string(eps));
  require(weight_decay >= 0.0f, "Adam: weight_decay must not be negative, got " + std::to_string(weight_decay));
  steps_.assign(parameters_.size(), 0);
  for (const Tensor& parameter : parameters_) {
    const auto n = static_cast<std::size_t>(parameter.numel());
    exp_avg_.emplace_back(n, 0.0f);
    exp_avg_sq_.emplace_back(n, 0.0f);
  }
}

void Adam::step() { update(false); }

AdamW::AdamW(std::vector<Tensor> parameters, float learning_rate, float beta1, float beta2, float eps,
             float weight_decay)
    : Adam(std::move(parameters), learning_rate, beta1, beta2, eps, weight_decay) {}

void AdamW::step() { update(true); }

}  // namespace kiln::optim
