// The pieces of a transformer block: the GELU node, causal self-attention, the MLP, and the
// pre-norm block that joins them with residual connections.
//
// Everything here is built from graph operations (autograd::add, autograd::reshape,
// autograd::gelu, the layers' forward), so that backward() reaches every parameter. A Tensor
// member such as x.reshape(...) or x + y computes the same values and records nothing.
#include <vector>

#include "kiln/activations.h"
#include "kiln/transformer.h"

namespace kiln::autograd {

Tensor GeluFunction::forward() {
  // Module 02's exact GELU of inputs[0]. Call it as kiln::gelu: inside namespace kiln::autograd,
  // a plain gelu(...) is autograd::gelu, which would record this node again.
  throw kiln::NotImplemented();
}

std::vector<Tensor> GeluFunction::backward(const Tensor& grad_output) {
  // One gradient, for x: module 02's gelu_backward at the INPUT x (not at the output).
  throw kiln::NotImplemented();
}

}  // namespace kiln::autograd

namespace kiln::nn {

Tensor CausalSelfAttention::forward(const Tensor& x) {
  // Self-attention: x is the query, the key and the value, with this module's four weights and
  // heads. The causal flag must be on: multi_head_attention's default is off.
  throw kiln::NotImplemented();
}

Tensor MLP::forward(const Tensor& x) {
  // x (B, T, D): reshape to (B·T, D) rows (autograd::reshape, -1 for the rows), fc (4D wide),
  // autograd::gelu, proj (back to D), reshape to x's shape.
  throw kiln::NotImplemented();
}

Tensor TransformerBlock::forward(const Tensor& x) {
  // Pre-norm: the LayerNorm sits at the start of each branch, the residual path stays clean.
  //   h = x + attention(ln1(x));  return h + mlp(ln2(h)), each + an autograd::add.
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
