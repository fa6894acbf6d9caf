// Module 07, Optimizers: turning gradients into updates.
//
// A parameter is a module 06 leaf: a contiguous float32 tensor built by the caller (a contiguous
// view at an offset too, one slice of a flat buffer of parameters), marked with
// set_requires_grad() BEFORE the optimizer is built (the optimizer keeps copies of the handles,
// which share the values and the gradient bookkeeping that exist at that moment). After
// loss.backward() its gradient is parameter.grad(), and autograd::has_grad(parameter) says whether
// backward() reached it since its last zero_grad(). Its gradient may be a contiguous view at an
// offset too: read it from data(), never from storage_data().
//
// An optimizer updates every parameter IN PLACE: it writes the new values into the parameter's
// own storage (parameter.data(), which starts at its offset; element i of numel(), row-major),
// so that the caller's handle, and every other handle sharing that storage, sees them. Assigning
// a new tensor to a handle (parameter = parameter - g·lr) changes only that one handle, and the
// model never learns.
// Writing through data() is not an operation module 06 records, so no graph grows from it.
//
// One step, for each parameter p that has a gradient g (parameters without one are skipped, and
// their state does not change), element by element, with lr the current learning_rate(). Every
// element of such a parameter is updated, one whose g is exactly 0 too: momentum and Adam's
// m and v keep moving on what they remember.
//
//   SGD (PyTorch's torch.optim.SGD, dampening 0)
//     g   = g + weight_decay·p                                     (L2 weight decay)
//     buf = g on the parameter's first step, momentum·buf + g after (only when momentum ≠ 0)
//     d   = g + momentum·buf  with Nesterov,  buf  with momentum,  g  without
//     p   = p - lr·d
//
//   Adam (torch.optim.Adam), t = the number of steps this parameter has taken, this one included
//     g   = g + weight_decay·p                                     (L2 weight decay)
//     m   = beta1·m + (1 - beta1)·g                                (m and v start at zero)
//     v   = beta2·v + (1 - beta2)·g²
//     m̂   = m / (1 - beta1^t),  v̂ = v / (1 - beta2^t)              (bias correction, in double:
//                                                                  v̂ may pass float's range,
//                                                                  1e40 for g = 1e20 at t = 1)
//     p   = p - lr·m̂ / (√v̂ + eps)                                 (the eps it was built with)
//
//   AdamW (torch.optim.AdamW): decoupled weight decay
//     p   = p - lr·weight_decay·p                                  (first, on the old p)
//     then Adam's update with g itself (no weight_decay·p added to g)
//
// State is kept per parameter: a parameter's momentum buffer starts on ITS first step with a
// gradient, and its Adam step count t counts only the steps on which it had a gradient.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/tensor.h"

namespace kiln::optim {

// What every optimizer shares: the parameters, the learning rate, and zero_grad().
class Optimizer {
 public:
  // Given. Throws std::invalid_argument, naming the parameter's position and shape, when a
  // parameter does not require grad or is not contiguous.
  explicit Optimizer(std::vector<Tensor> parameters);
  virtual ~Optimizer() = default;

  // Yours: one update of every parameter that has a gradient (see above).
  virtual void step() = 0;

  // Yours (src/sgd.cpp): forgets every parameter's gradient, so that after it
  // autograd::has_grad(p) is false and the next backward() starts from nothing. (backward() adds
  // into a gradient; without zero_grad() every batch's gradient piles onto the last one's.)
  void zero_grad();

  // Given. The learning rate the next step() uses; a schedule changes it between steps.
  // set_learning_rate throws std::invalid_argument for a negative, NaN or infinite rate.
  float learning_rate() const { return learning_rate_; }
  void set_learning_rate(float learning_rate);

  const std::vector<Tensor>& parameters() const { return parameters_; }

 protected:
  std::vector<Tensor> parameters_;  // handles sharing the caller's storage and bookkeeping
  float learning_rate_ = 0.0f;
};

// Stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay.
class SGD : public Optimizer {
 public:
  // Given: stores the settings. Throws std::invalid_argument for a negative learning rate,
  // momentum or weight decay, and for nesterov without momentum.
  SGD(std::vector<Tensor> parameters, float learning_rate, float momentum = 0.0f, bool nesterov = false,
      float weight_decay = 0.0f);

  // Yours (src/sgd.cpp): one SGD update of every parameter that has a gradient, with weight
  // decay, momentum and Nesterov momentum as set (the rule above).
  void step() override;

 protected:
  float momentum_ = 0.0f;
  bool nesterov_ = false;
  float weight_decay_ = 0.0f;
  // momentum_buffers_[k]: parameter k's buf, numel() floats in row-major order; empty until the
  // parameter's first step with a gradient (the given constructor leaves them all empty).
  std::vector<std::vector<float>> momentum_buffers_;
};

// Adam, with bias correction and L2 weight decay added to the gradient.
class Adam : public Optimizer {
 public:
  // Given: stores the settings and zeroes the state. Throws std::invalid_argument for a negative
  // learning rate, eps or weight decay, and for a beta outside [0, 1).
  Adam(std::vector<Tensor> parameters, float learning_rate = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f,
       float eps = 1e-8f, float weight_decay = 0.0f);

  // Given: update(false).
  void step() override;

 protected:
  // Yours (src/adam.cpp): one step of Adam, or of AdamW when decoupled_weight_decay is true.
  void update(bool decoupled_weight_decay);

  float beta1_ = 0.9f;
  float beta2_ = 0.999f;
  float eps_ = 1e-8f;
  float weight_decay_ = 0.0f;
  // Per parameter k: steps_[k] is t, the steps it has taken (0 before its first); exp_avg_[k] is
  // m and exp_avg_sq_[k] is v, numel() floats each in row-major order, zero at the start.
  std::vector<std::int64_t> steps_;
  std::vector<std::vector<float>> exp_avg_;
  std::vector<std::vector<float>> exp_avg_sq_;
};

// Adam with decoupled weight decay (Loshchilov and Hutter): the decay shrinks the weights
// directly instead of passing through the adaptive step.
class AdamW : public Adam {
 public:
  // Given: as Adam, with weight decay 0.01 by default.
  AdamW(std::vector<Tensor> parameters, float learning_rate = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f,
        float eps = 1e-8f, float weight_decay = 0.01f);

  // Given: update(true).
  void step() override;
};

// Learning-rate schedules (yours: src/schedules.cpp). Each computes in double and rounds to float
// once at the end.

// The rate for `epoch` (0, 1, 2, ...) when it is multiplied by gamma every step_size epochs:
//   base_lr · gamma^⌊epoch / step_size⌋
// (PyTorch's StepLR). Epochs 0 to step_size - 1 use base_lr itself. Throws std::invalid_argument
// naming the argument when epoch < 0 or step_size < 1 (0 would divide by zero). The
// drops ⌊epoch / step_size⌋ are counted in integers, exact for every int epoch (a schedule
// counted in iterations passes 2^24, where a float no longer holds every integer).
float step_lr(float base_lr, int epoch, int step_size, float gamma);

// Cosine annealing with an optional linear warm-up, over steps 0, 1, 2, ...:
//   step < warmup_steps:                   base_lr · step / warmup_steps
//   warmup_steps ≤ step < total_steps:     min_lr + (base_lr - min_lr) · (1 + cos(π · s / d)) / 2,
//                                          s = step - warmup_steps, d = total_steps - warmup_steps
//   step ≥ total_steps:                    min_lr
// The warm-up rises in a straight line from 0 at step 0 towards base_lr, which step warmup_steps
// reaches exactly; the cosine then falls from base_lr to min_lr over the remaining steps. This is
// the convention of the get_lr_cosine_schedule that Stanford's CS336 tests (max 1, min 0.1,
// warm-up 7, total 21: 0, 1/7, ..., 6/7, then 1 at step 7, 0.55 at step 14, 0.1 from step 21 on),
// and up to total_steps of Hugging Face's get_cosine_schedule_with_warmup (which has min_lr 0).
// The rule for step ≥ total_steps comes first: with warmup_steps = total_steps = T the rate rises
// to base_lr·(T - 1)/T at step T - 1 and is min_lr at step T.
// warmup_steps = 0 (the default) is plain cosine annealing (PyTorch's CosineAnnealingLR, without
// restarts): step 0 gives base_lr exactly, step total_steps gives min_lr exactly.
// Throws std::invalid_argument, naming the argument, when step < 0, total_steps < 1,
// warmup_steps < 0, warmup_steps > total_steps, or base_lr or min_lr is negative, NaN or infinite
// (an infinite base_lr makes no schedule: inf · 0 is NaN at step 0 of a warm-up), also for a step
// at or past total_steps: every argument is checked before the rule for step ≥ total_steps, so
// cosine_lr(1, -0.5, 30, 20) throws, it does not return -0.5. The largest
// float is a rate like any other. step, total_steps and warmup_steps are subtracted as ints and
// converted to double, never to float: exact past 2^24 (step 16777217 after a warm-up of 16777216
// is one step of the cosine).
float cosine_lr(float base_lr, float min_lr, int step, int total_steps, int warmup_steps = 0);

}  // namespace kiln::optim
