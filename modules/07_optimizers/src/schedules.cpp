// Learning-rate schedules: step decay and cosine annealing.
#include <cmath>
#include <numbers>

#include "kiln/optimizers.h"

namespace kiln::optim {

float step_lr(float base_lr, int epoch, int step_size, float gamma) {
  // base_lr · gamma^⌊epoch / step_size⌋: integer division, so the rate stays flat for step_size
  // epochs, then drops. Compute in double (std::pow) and round to float once.
  throw kiln::NotImplemented();
}

float cosine_lr(float base_lr, float min_lr, int step, int total_steps) {
  // min_lr + (base_lr - min_lr) · (1 + cos(π · step / total_steps)) / 2, in double
  // (std::numbers::pi), rounded to float once. A step at or past total_steps returns min_lr.
  throw kiln::NotImplemented();
}

}  // namespace kiln::optim
