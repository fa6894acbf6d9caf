// The elementwise losses: mean squared error and binary cross-entropy with logits.
//
// Both take two tensors of the same shape, views included: read each through x.contiguous()
// (a row-major copy of a view, or x itself) and its data(). Check the shapes first: when
// a.shape() != b.shape(), throw kiln::ShapeError naming both (to_string(a.shape()) gives
// "(3, 7)"). Equal element counts are not enough: a (7, 3) target for a (3, 7) prediction pairs
// the wrong elements, and a (7) target would broadcast without a word.
//
// A loss is a scalar tensor, shape (): return Tensor::scalar(value), not a tensor of shape (1).
// Sum in double and divide by the number of elements n (the mean reduction).
// Any tensor given here may be a view, also a contiguous one that starts inside its storage
// (contiguous() returns it as it is): read it through to_vector(), or from data() after
// contiguous(), never from storage_data() as if it began at the storage's first float.
// mse_loss and binary_cross_entropy_with_logits of two empty tensors give the mean of no values,
// 0/0 = NaN, as a scalar.
// An empty batch's backward pass (no elements, or logits (0, C) and no targets) gives an empty
// gradient of the input's shape.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/activations.h"
#include "kiln/losses.h"

namespace kiln {

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  // (1/n)·Σ_i (prediction_i - target_i)²: mse_loss([1, 2, 3], [1, 2, 5]) = 4/3 = 1.333333.
  throw kiln::NotImplemented();
}

Tensor mse_loss_backward(const Tensor& prediction, const Tensor& target) {
  // dL/d(prediction_i) = 2·(prediction_i - target_i)/n, a tensor of the prediction's shape:
  // [0, 0, -4/3] for the example above. Compute each element in double, subtracting first, and
  // round it to float once: in float, 3e38 - (-3e38) overflows though the gradient (n = 4) is
  // 3e38, and (2/n)·p - (2/n)·t gives 4 instead of 16/3 for [100000008, 0, 0] against
  // [100000000, 0, 0].
  throw kiln::NotImplemented();
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets) {
  // For each logit z with target t (0 or 1): -[t·log σ(z) + (1 - t)·log(1 - σ(z))], which
  // rearranges to max(z, 0) - z·t + log(1 + e^(-|z|)). Use that form (std::log1p(x) is
  // log(1 + x), precise for tiny x): it is finite for every z, while log(1 - σ(z)) is log(0) =
  // -inf once σ(z) rounds to 1 (z = 100 is enough). Mean over all n elements, added in a double:
  // two losses of 3e38 (z = 3e38, t = 0) total 6e38, past float's range, though their mean is not.
  // For z = [2, -1], t = [1, 0]: (log(1 + e^-2) + log(1 + e^-1))/2 = 0.2200948.
  throw kiln::NotImplemented();
}

Tensor binary_cross_entropy_with_logits_backward(const Tensor& logits, const Tensor& targets) {
  // dL/dz_i = (σ(z_i) - t_i)/n, of the logits' shape. Module 02's sigmoid is stable.
  // Subtract, then scale: σ(z) - t of sigmoid()'s own value is exact where σ(z) is near t (z = 16
  // against t = 1), and scaling σ and t by 1/n before subtracting loses it (25% off for n = 3).
  throw kiln::NotImplemented();
}

}  // namespace kiln
