// Cross-entropy and the negative log-likelihood, by indexing and by a one-hot matrix.
//
// Layout: logits and log_probs are (N, C), row-major once you take .contiguous(): the score of
// class c for example n is at n·C + c. targets holds N class ids.
//
// Every function checks its arguments before computing anything (a helper shared by all five
// keeps it in one place):
//   * the scores are 2-D and targets.size() == N, else kiln::ShapeError naming the scores' shape
//     and the targets' as "(5)" for 5 targets. Test the dimensions first: a scalar's shape () has
//     no shape()[0] to compare;
//   * every id is in [0, C), else kiln::IndexError naming the id right after the word "target"
//     ("cross_entropy: target 7 of row 2 is not a class id in [0, 3)"): an id of C reads the
//     next row's first score, and a negative one the previous row's last, without any error.
// A loss is a scalar tensor, shape (): Tensor::scalar(value).
// Any tensor given here may be a view, also a contiguous one that starts inside its storage
// (contiguous() returns it as it is): read it through to_vector(), or from data() after
// contiguous(), never from storage_data() as if it began at the storage's first float.
// mse_loss and binary_cross_entropy_with_logits of two empty tensors give the mean of no values,
// 0/0 = NaN, as a scalar.
// An empty batch's backward pass (no elements, or logits (0, C) and no targets) gives an empty
// gradient of the input's shape.
#include <cmath>
#include <string>
#include <vector>

#include "kiln/activations.h"
#include "kiln/losses.h"

namespace kiln {

Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  // -(1/N)·Σ_n log_probs[n, targets[n]]: one lookup per row. For
  // log_probs = [[-0.1, -2.3], [-1.2, -0.4]] and targets {0, 1}: (0.1 + 0.4)/2 = 0.25.
  // Add in a double and divide there: two values of -3e38 total -6e38, past float's range,
  // although their mean is a float. Round to float once, at the end. Divide also when N is 0
  // (an empty batch): the mean of no values is -(1/0)·0 = NaN, not 0.
  throw kiln::NotImplemented();
}

Tensor nll_loss_one_hot(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  // The same loss without indexing into log_probs: build the one-hot matrix Y (N, C), 1 at
  // (n, targets[n]) and 0 elsewhere, multiply it elementwise with log_probs (module 01's *
  // accepts views) and sum all N·C products: -(1/N)·Σ Y ⊙ log_probs. Divide by N, the number
  // of rows, not by N·C. Add the products in a double, as nll_loss does (sum().item() would hand
  // the total back as a float, -inf for -6e38), and round to float once, at the end.
  throw kiln::NotImplemented();
}

Tensor nll_loss_backward(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  // dL/d(log_probs) = -Y/N: -1/N at (n, targets[n]) and 0 elsewhere, shape (N, C).
  throw kiln::NotImplemented();
}

Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  // (1/N)·Σ_n [log Σ_c e^(z[n, c]) - z[n, targets[n]]]. Module 02's log_softmax(logits, 1)
  // computes z - log Σ e^z along each row with the row maximum taken out, so that e^(1e4)
  // never appears; nll_loss of it is this loss. cross_entropy([[0, 0]], {0}) = ln 2 = 0.693147.
  // Not nll_loss_one_hot: a masked logit of -inf, or [[3e38, -3e38]], has log-probability -inf
  // in a class that is not the target, and 0·(-inf) is NaN; the lookup never reads it. An empty
  // batch (N = 0) gives 0/0 = NaN, as nll_loss does.
  throw kiln::NotImplemented();
}

Tensor cross_entropy_backward(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  // (softmax(logits) - Y)/N, shape (N, C): module 02's softmax(logits, 1), minus 1 at each
  // target, divided by N. For [[0, 0]] and {0}: [[-0.5, 0.5]].
  throw kiln::NotImplemented();
}

}  // namespace kiln
