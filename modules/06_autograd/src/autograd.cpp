// The backward pass: walk the recorded graph from this tensor back to the leaves.
// Yours to write. Add any helper functions you like in this file.
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/autograd.h"

namespace kiln {

void Tensor::backward() {
  // The gradient of a one-element tensor (a loss) with respect to itself is 1: call
  // backward(Tensor::ones(shape())). A tensor with any other number of elements, none included,
  // has no implied gradient: throw ShapeError naming its shape, e.g. "(2, 3)" or "(2, 0)", also
  // when it does not require grad (this check comes before backward(grad_output)'s).
  throw kiln::NotImplemented();
}

void Tensor::backward(const Tensor& grad_output) {
  // grad_output is dL/d(this) and must have this tensor's shape: otherwise throw ShapeError
  // naming both shapes. Then, when this tensor does not require grad, throw std::logic_error
  // (the shape check comes first: a wrong shape is a ShapeError whether or not it requires grad).
  // requires_grad() decides, not the grad_fn: a result switched off with set_requires_grad(false)
  // keeps its grad_fn, yet does not require grad.
  //
  // 1. Order the graph. Starting from this tensor's AutogradMeta, follow grad_fn->inputs
  //    (only inputs that require grad) depth first, visiting each AutogradMeta once: mark it
  //    visited when you first reach it, so that a tensor reached along many paths is searched
  //    once (y = x, then 64 times y = y + y, has 2^64 paths from y to x and 65 tensors). Reversing
  //    the order in which the searches finish lists every tensor before all the tensors it was
  //    computed from.
  // 2. Walk that order with a map from AutogradMeta* to the gradient received so far, starting
  //    with {this: grad_output}. For a tensor with a grad_fn, call grad_fn->backward(gradient);
  //    when it returns more or fewer gradients than grad_fn->inputs holds, throw
  //    std::logic_error naming both counts. ADD each returned gradient into the map entry of
  //    the matching input (a tensor used twice, as in x * x, receives two contributions), as
  //    entry = entry + gradient, a new tensor: an entry may share its storage with another
  //    input's entry (a node may hand one tensor to both inputs) or be grad_output itself, which
  //    the caller gets back as it was. For a
  //    leaf (no grad_fn), set its gradient aside (it is whole once the leaf is reached); after
  //    the walk, add it into meta->grad (a std::optional): keep what earlier backward() calls
  //    left there, and store a copy (clone()), never a handle to a temporary.
  //    This tensor too, when it is a leaf: x.backward(g) on a leaf x gives x.grad() = g.
  // A refused walk changes no gradient: every node's backward runs before any leaf receives its
  // gradient, so a node that returns a wrong count leaves every leaf as it was. grad_output may
  // be a view at an offset: a leaf receives its own elements (clone() copies them).
  // Skip every input that does not require grad: it must not receive a gradient, nor pass one on
  // (a result switched off with set_requires_grad(false) cuts the graph there). Walk every
  // tensor that has an entry, also when its gradient is all zeros: zeros are a gradient too, and
  // a leaf reached with them holds them (has_grad true).
  throw kiln::NotImplemented();
}

}  // namespace kiln
