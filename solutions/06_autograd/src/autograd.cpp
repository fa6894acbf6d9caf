// The backward pass: walk the recorded graph from this tensor back to the leaves.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/autograd.h"

namespace kiln {

namespace {

// The bookkeeping of a tensor that gradients flow into, or null for one they skip.
AutogradMeta* tracked(const Tensor& t) {
  return t.requires_grad() ? t.autograd().get() : nullptr;
}

// Depth-first search that appends a tensor after every tensor it was computed from.
void visit(AutogradMeta* meta, std::unordered_set<AutogradMeta*>& seen,
           std::vector<AutogradMeta*>& order) {
  if (!seen.insert(meta).second) return;
  if (meta->grad_fn) {
    for (const Tensor& input : meta->grad_fn->inputs) {
      if (AutogradMeta* input_meta = tracked(input)) visit(input_meta, seen, order);
    }
  }
  order.push_back(meta);
}

// Every tracked tensor reachable from root, each listed before all the tensors it was computed
// from: the reverse of the depth-first finishing order.
std::vector<AutogradMeta*> topological_order(AutogradMeta* root) {
  std::unordered_set<AutogradMeta*> seen;
  std::vector<AutogradMeta*> order;
  visit(root, seen, order);
  std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace

void Tensor::backward() {
  if (numel() != 1) {
    throw ShapeError("backward() without a gradient needs a tensor with one element, not shape " +
                     to_string(shape_));
  }
  backward(Tensor::ones(shape_));
}

void Tensor::backward(const Tensor& grad_output) {
  if (grad_output.shape() != shape_) {
    throw ShapeError("backward: grad_output has shape " + to_string(grad_output.shape()) +
                     " but the tensor has shape " + to_string(shape_));
  }
  AutogradMeta* root = tracked(*this);
  if (root == nullptr) {
    throw std::logic_error("backward() on a tensor that does not require grad");
  }

  // The gradient each tensor has received so far from the tensors computed from it.
  std::unordered_map<AutogradMeta*, Tensor> pending;
  pending[root] = grad_output;
  // The leaves reached and their whole gradients, added into grad only after the walk: a node
  // that refuses (a wrong count of gradients) must leave every gradient as it was.
  std::vector<std::pair<AutogradMeta*, Tensor>> leaves;

  // In topological order, every tensor's consumers have passed on their gradient before the
  // tensor itself is processed.
  for (AutogradMeta* meta : topological_order(root)) {
    const auto found = pending.find(meta);
    if (found == pending.end()) continue;  // no path from the root carries a gradient here
    const Tensor grad = found->second;

    if (!meta->grad_fn) {
      // A leaf: its pending gradient is whole once it is reached (every tensor computed from it
      // came before it); it is credited after the walk.
      leaves.emplace_back(meta, grad);
      continue;
    }
    const std::vector<Tensor>& inputs = meta->grad_fn->inputs;
    const std::vector<Tensor> input_grads = meta->grad_fn->backward(grad);
    if (input_grads.size() != inputs.size()) {
      throw std::logic_error("a Function's backward must return one gradient per input (inputs: " +
                             std::to_string(inputs.size()) + ", gradients returned: " +
                             std::to_string(input_grads.size()) + ")");
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      AutogradMeta* input_meta = tracked(inputs[i]);
      if (input_meta == nullptr) continue;
      auto slot = pending.find(input_meta);
      if (slot == pending.end()) {
        pending.emplace(input_meta, input_grads[i]);
      } else {
        slot->second = slot->second + input_grads[i];
      }
    }
  }
  // Every node has returned: add each leaf's gradient to what earlier backward calls left (a copy,
  // never a handle to a temporary).
  for (const auto& [meta, grad] : leaves) meta->grad = meta->grad ? *meta->grad + grad : grad.clone();
}

}  // namespace kiln
