// Cross-entropy and the negative log-likelihood, by indexing and by a one-hot matrix.
#include <cmath>
#include <string>
#include <vector>

#include "kiln/activations.h"
#include "kiln/losses.h"

namespace kiln {

namespace {

// logits (N, C) and N targets in [0, C), or nothing runs.
void check_targets(const char* name, const Tensor& scores, const std::vector<std::int64_t>& targets) {
  const std::string target_shape = "(" + std::to_string(targets.size()) + ")";
  if (scores.dim() != 2 || scores.shape()[0] != static_cast<std::int64_t>(targets.size())) {
    throw ShapeError(std::string(name) + " needs (N, C) scores and N targets, got " + to_string(scores.shape()) +
                     " and targets " + target_shape);
  }
  const std::int64_t classes = scores.shape()[1];
  for (std::size_t n = 0; n < targets.size(); ++n) {
    if (targets[n] < 0 || targets[n] >= classes) {
      throw IndexError(std::string(name) + ": target " + std::to_string(targets[n]) + " of row " + std::to_string(n) +
                       " is not a class id in [0, " + std::to_string(classes) + ")");
    }
  }
}

// Y (N, C), row-major: 1 at (n, targets[n]), 0 elsewhere.
Tensor one_hot_rows(const std::vector<std::int64_t>& targets, std::int64_t classes) {
  const std::int64_t rows = static_cast<std::int64_t>(targets.size());
  std::vector<float> y(static_cast<std::size_t>(rows * classes), 0.0f);
  for (std::int64_t n = 0; n < rows; ++n) y[n * classes + targets[n]] = 1.0f;
  return Tensor({rows, classes}, std::move(y));
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  check_targets("nll_loss", log_probs, targets);
  const std::int64_t rows = log_probs.shape()[0], classes = log_probs.shape()[1];
  const std::vector<float> logp = log_probs.to_vector();  // (N, C), row-major
  // One lookup per row: N reads and N additions, whatever C is.
  double total = 0.0;
  for (std::int64_t n = 0; n < rows; ++n) total += logp[n * classes + targets[n]];
  return Tensor::scalar(static_cast<float>(-total / static_cast<double>(rows)));
}

Tensor nll_loss_one_hot(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  check_targets("nll_loss_one_hot", log_probs, targets);
  const std::int64_t rows = log_probs.shape()[0], classes = log_probs.shape()[1];
  // Y ⊙ log_probs is zero except at the N targets; summing its N·C products finds them. The
  // products are exact (1·v is v, 0·v is 0 for every finite v); they are added in double and the
  // mean taken there, as nll_loss does, so that N values whose total leaves float's range (-3e38
  // twice) still give their mean: picked.sum() would round the total to float first.
  const Tensor picked = one_hot_rows(targets, classes) * log_probs;
  double sum = 0.0;
  for (const float product : picked.to_vector()) sum += product;
  return Tensor::scalar(static_cast<float>(-sum / static_cast<double>(rows)));
}

Tensor nll_loss_backward(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  check_targets("nll_loss_backward", log_probs, targets);
  const std::int64_t rows = log_probs.shape()[0], classes = log_probs.shape()[1];
  std::vector<float> grad(static_cast<std::size_t>(rows * classes), 0.0f);
  for (std::int64_t n = 0; n < rows; ++n) grad[n * classes + targets[n]] = -1.0f / static_cast<float>(rows);
  return Tensor({rows, classes}, std::move(grad));
}

Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  check_targets("cross_entropy", logits, targets);
  // log_softmax takes out each row's maximum: log Σ e^z never overflows.
  return nll_loss(log_softmax(logits, 1), targets);
}

Tensor cross_entropy_backward(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  check_targets("cross_entropy_backward", logits, targets);
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  std::vector<float> grad = softmax(logits, 1).to_vector();  // (N, C), each row sums to 1
  for (std::int64_t n = 0; n < rows; ++n) grad[n * classes + targets[n]] -= 1.0f;
  for (float& g : grad) g /= static_cast<float>(rows);
  return Tensor({rows, classes}, std::move(grad));
}

}  // namespace kiln
