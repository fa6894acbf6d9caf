// Learning-rate schedules: step decay and cosine annealing.
#include <cmath>
#include <numbers>

#include "kiln/optimizers.h"

namespace kiln::optim {

float step_lr(float base_lr, int epoch, int step_size, float gamma) {
  const int drops = epoch / step_size;
  return static_cast<float>(base_lr * std::pow(static_cast<double>(gamma), drops));
}

float cosine_lr(float base_lr, float min_lr, int step, int total_steps) {
  if (step >= total_steps) return min_lr;
  const double progress = static_cast<double>(step) / total_steps;
  const double base = base_lr, floor = min_lr;
  return static_cast<float>(floor + (base - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
}

}  // namespace kiln::optim
