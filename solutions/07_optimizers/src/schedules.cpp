// Learning-rate schedules: step decay and cosine annealing with warm-up.
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "kiln/optimizers.h"

namespace kiln::optim {

float step_lr(float base_lr, int epoch, int step_size, float gamma) {
  if (epoch < 0) throw std::invalid_argument("step_lr: epoch must not be negative, got " + std::to_string(epoch));
  if (step_size < 1) throw std::invalid_argument("step_lr: step_size must be at least 1, got " + std::to_string(step_size));
  const int drops = epoch / step_size;
  return static_cast<float>(base_lr * std::pow(static_cast<double>(gamma), drops));
}

float cosine_lr(float base_lr, float min_lr, int step, int total_steps, int warmup_steps) {
  const auto require = [](bool condition, const std::string& message) {
    if (!condition) throw std::invalid_argument("cosine_lr: " + message);
  };
  require(step >= 0, "step must not be negative, got " + std::to_string(step));
  require(total_steps >= 1, "total_steps must be at least 1, got " + std::to_string(total_steps));
  require(warmup_steps >= 0, "warmup_steps must not be negative, got " + std::to_string(warmup_steps));
  require(warmup_steps <= total_steps, "warmup_steps (" + std::to_string(warmup_steps) +
                                           ") must not exceed total_steps (" + std::to_string(total_steps) + ")");
  require(std::isfinite(base_lr) && base_lr >= 0.0f, "base_lr must be finite and not negative, got " + std::to_string(base_lr));
  require(std::isfinite(min_lr) && min_lr >= 0.0f, "min_lr must be finite and not negative, got " + std::to_string(min_lr));
  if (step >= total_steps) return min_lr;
  const double base = base_lr, floor = min_lr;
  if (step < warmup_steps) return static_cast<float>(base * step / warmup_steps);
  const double progress = static_cast<double>(step - warmup_steps) / (total_steps - warmup_steps);
  return static_cast<float>(floor + (base - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
}

}  // namespace kiln::optim
