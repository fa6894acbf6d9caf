// The pieces of a transformer block: the GELU node, causal self-attention, the MLP, and the
// pre-norm block that joins them with residual connections.
#include <vector>

#include "kiln/activations.h"
#include "kiln/transformer.h"

namespace kiln::autograd {

Tensor GeluFunction::forward() { return kiln::gelu(inputs[0]); }

std::vector<Tensor> GeluFunction::backward(const Tensor& grad_output) {
  return {kiln::gelu_backward(inputs[0], grad_output)};
}

}  // namespace kiln::autograd

namespace kiln::nn {

Tensor CausalSelfAttention::forward(const Tensor& x) {
  return multi_head_attention(x, x, x, w_query, w_key, w_value, w_out, heads, /*causal=*/true);
}

Tensor MLP::forward(const Tensor& x) {
  const Shape shape = x.shape();
  const Tensor rows = autograd::reshape(x, {-1, dim});  // (B·T, D): every position a row
  const Tensor hidden = autograd::gelu(fc->forward(rows));  // (B·T, 4D)
  return autograd::reshape(proj->forward(hidden), shape);  // (B, T, D)
}

Tensor TransformerBlock::forward(const Tensor& x) {
  const Tensor h = autograd::add(x, attention->forward(ln1->forward(x)));  // (B, T, D)
  return autograd::add(h, mlp->forward(ln2->forward(h)));
}

}  // namespace kiln::nn
