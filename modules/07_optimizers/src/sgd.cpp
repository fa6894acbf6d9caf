// zero_grad, and stochastic gradient descent with momentum, Nesterov momentum and weight decay.
#include <cstdint>
#include <vector>

#include "kiln/optimizers.h"

namespace kiln::optim {

void Optimizer::zero_grad() {
  // Every parameter forgets its gradient: Tensor::zero_grad() does that for one tensor (through a
  // handle that shares its bookkeeping, as parameters_ holds). Afterwards has_grad(p) is false.
  throw kiln::NotImplemented();
}

void SGD::step() {
  // For each parameter k with a gradient (skip it, state and all, when !autograd::has_grad):
  //   g = parameter.grad().contiguous(), p = parameter.data(): numel() floats, row-major, from
  //   the parameter's offset (it may be a view into a larger buffer: not storage_data()).
  //   Its gradient may be a contiguous view at an offset too: read it from data(), never from
  //   storage_data().
  //   For each element i, with lr = learning_rate():
  //     d = g[i] + weight_decay_·p[i]
  //     when momentum_ ≠ 0:  buf[i] = d on this parameter's first step (its buffer is still empty),
  //                          momentum_·buf[i] + d after;  then d = d + momentum_·buf[i] with
  //                          nesterov_, else d = buf[i]
  //     p[i] -= lr·d        (written into the storage: the caller's handle sees it)
  // The buffer is momentum_buffers_[k]: empty before the parameter's first step, so resize it to
  // numel() floats then.
  throw kiln::NotImplemented();
}

}  // namespace kiln::optim
