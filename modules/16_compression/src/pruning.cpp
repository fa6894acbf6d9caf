// Magnitude pruning, and keeping a pruned model pruned while it trains.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/compression.h"

namespace kiln::compress {

Tensor magnitude_mask(const Tensor& weight, double sparsity) {
  // Throw std::invalid_argument naming the sparsity unless 0 <= sparsity <= 1.
  // n = weight.numel(); count = std::llround(sparsity * n), the product in double (llround itself:
  // adding 0.5 and truncating rounds 0.49999999999999994 up to 1).
  // Order the flat indices 0 .. n-1 by |w| ascending, and among equal |w| by index ascending
  // (weight.to_vector() gives the values in row-major order, views too). A contiguous view at an
  // offset (a slice of a larger tensor) is read from data(), where its values start, not from
  // storage_data(), the storage's first float. The first count
  // indices of that order get 0 in the mask, every other index 1.
  // Return the mask as a new tensor of weight's shape.
  throw kiln::NotImplemented();
}

Tensor prune_magnitude(Tensor& weight, double sparsity) {
  // mask = magnitude_mask(weight, sparsity); then write 0 into weight.data()[k] wherever the
  // mask is 0. Write into the weight's own storage: assigning a new tensor to `weight` would
  // change only this handle, not the optimizer's or the model's. weight.data() is the weight's
  // first element (for a view at an offset, float offset() of the storage), not storage_data().
  // A sparsity outside [0, 1] raises magnitude_mask's std::invalid_argument before anything is
  // written: the weight is left as it was.
  // Return the mask.
  throw kiln::NotImplemented();
}

void masked_step(optim::Optimizer& optimizer, const std::vector<Tensor>& weights, const std::vector<Tensor>& masks) {
  // First judge every argument, before anything changes: std::invalid_argument with both counts
  // when weights.size() != masks.size(), ShapeError with both shapes when a mask's shape is not
  // its weight's (all of them, before the first gradient is masked).
  // For every k with autograd::has_grad(weights[k]): make its gradient grad ⊙ masks[k] (for
  // example by storing the product in weights[k].autograd()->grad, shared by every handle),
  // before the step, so that the optimizer's state never sees a pruned entry's gradient.
  // Then optimizer.step(). Then, for every k (a weight without a gradient too), multiply
  // weights[k] by masks[k] in place, through data(). (A copy of a handle, Tensor w =
  // weights[k], shares the storage and the gradient.)
  throw kiln::NotImplemented();
}

}  // namespace kiln::compress
