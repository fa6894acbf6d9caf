// Learning-rate schedules: step decay and cosine annealing with warm-up.
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "kiln/optimizers.h"

namespace kiln::optim {

float step_lr(float base_lr, int epoch, int step_size, float gamma) {
  // First std::invalid_argument naming the argument when epoch < 0 or step_size < 1.
  // base_lr · gamma^⌊epoch / step_size⌋: integer division, so the rate stays flat for step_size
  // epochs, then drops (and exact past 2^24, which a division in float is not). Compute in double
  // (std::pow) and round to float once.
  throw kiln::NotImplemented();
}

float cosine_lr(float base_lr, float min_lr, int step, int total_steps, int warmup_steps) {
  // First refuse what makes no schedule: std::invalid_argument naming the argument when step < 0,
  // total_steps < 1, warmup_steps < 0 or > total_steps, or base_lr or min_lr negative, NaN or
  // infinite (std::isfinite), also for a step at or past total_steps: every argument is checked
  // before the rule for step ≥ total_steps, so cosine_lr(1, -0.5, 30, 20) throws, it does not
  // return -0.5.
  // Then, in double (std::numbers::pi), rounded to float once:
  //   step ≥ total_steps: min_lr (test this first: it also covers warmup_steps = total_steps);
  //   step < warmup_steps: base_lr · step / warmup_steps (0 at step 0);
  //   otherwise min_lr + (base_lr - min_lr) · (1 + cos(π · s / d)) / 2 with s = step - warmup_steps
  //   and d = total_steps - warmup_steps.
  // step, total_steps and warmup_steps are subtracted as ints and converted to double, never to
  // float: exact past 2^24 (step 16777217 after a warm-up of 16777216 is one step of the cosine).
  throw kiln::NotImplemented();
}

}  // namespace kiln::optim
