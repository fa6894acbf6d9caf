// Cross-entropy as a node of module 06's graph: module 04's loss forward, its gradient backward.
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/losses.h"
#include "kiln/training.h"

namespace kiln::nn {

Tensor CrossEntropyFunction::forward() {
  // Module 04's kiln::cross_entropy of the logits inputs[0] against targets: a scalar, shape ().
  throw kiln::NotImplemented();
}

std::vector<Tensor> CrossEntropyFunction::backward(const Tensor& grad_output) {
  // One gradient, for the logits: grad_output (shape (), one number) times module 04's
  // kiln::cross_entropy_backward(inputs[0], targets), shape (N, C). The chain rule: the upstream
  // gradient is not always 1 (3·loss passes 3 down).
  throw kiln::NotImplemented();
}

Tensor cross_entropy_loss(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  // Make a CrossEntropyFunction node (std::make_shared), store the targets in it, and return
  // autograd::Function::apply(node, {logits}): apply runs forward() and records the node when the
  // logits require grad.
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
