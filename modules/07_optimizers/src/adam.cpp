// Adam and AdamW: one update with bias-corrected running averages of the gradient and its square.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/optimizers.h"

namespace kiln::optim {

void Adam::update(bool decoupled_weight_decay) {
  // For each parameter k with a gradient (skip it, state and all, when !autograd::has_grad):
  //   t = ++steps_[k] (this parameter's steps, this one included: 1 on its first)
  //   g = parameter.grad().contiguous(), p = parameter.data(), m = exp_avg_[k], v = exp_avg_sq_[k]
  //   (p and g from their offsets: the parameter, and its gradient, may be views into a larger
  //   buffer: not storage_data())
  //   For each element i, with lr = learning_rate():
  //     AdamW (decoupled_weight_decay):  p[i] -= lr·weight_decay_·p[i], and use g[i] as it is
  //     Adam:                            use g[i] + weight_decay_·p[i]
  //     m[i] = beta1_·m[i] + (1 - beta1_)·g;   v[i] = beta2_·v[i] + (1 - beta2_)·g²
  //     m̂ = m[i] / (1 - beta1_^t);  v̂ = v[i] / (1 - beta2_^t)   (in double, the corrections from
  //       std::pow: v[i] fits a float where v̂ may not, 1e37 and 1e40 for g = 1e20 on step 1)
  //     p[i] -= lr·m̂ / (√v̂ + eps_)   (eps_, the constructor's eps, not the default 1e-8)
  // On the first step m̂ = g and v̂ = g², so every element moves by about lr·sign(g). Update every
  // element, also where g is exactly 0: m and v decay and p still moves (p = [1], lr 0.1,
  // gradients 1 then 0: 0.9, then 0.8329942).
  throw kiln::NotImplemented();
}

}  // namespace kiln::optim
