// Cross-entropy as a node of module 06's graph: module 04's loss forward, its gradient backward.
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/losses.h"
#include "kiln/training.h"

namespace kiln::nn {

Tensor CrossEntropyFunction::forward() { return kiln::cross_entropy(inputs[0], targets); }

std::vector<Tensor> CrossEntropyFunction::backward(const Tensor& grad_output) {
  // dL/dz = dL/d(loss) · d(loss)/dz; the loss is a scalar, so grad_output holds one number.
  return {kiln::cross_entropy_backward(inputs[0], targets) * grad_output.item()};
}

Tensor cross_entropy_loss(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  auto node = std::make_shared<CrossEntropyFunction>();
  node->targets = targets;
  return autograd::Function::apply(node, {logits});
}

}  // namespace kiln::nn
