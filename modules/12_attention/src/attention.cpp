// Scaled dot-product attention: the causal mask, the weights, and the graph node's forward and
// backward passes.
//
// Every ShapeError here names the two shapes that disagree, e.g. "q (3, 4) and k (5, 3)": a
// small helper that formats two named shapes keeps the messages short.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/activations.h"
#include "kiln/attention.h"

namespace kiln {

Tensor causal_mask(std::int64_t t_q, std::int64_t t_k) {
  // mask (t_q, t_k), row-major: row = query position, column = key position. Start from zeros
  // and write -std::numeric_limits<float>::infinity() at (query, key) wherever key > query, so
  // that query t sees the keys 0 .. t: itself and everything before it, nothing after.
  // (Leave a mask with no elements as it is: data() of it has nothing to write.)
  throw kiln::NotImplemented();
}

Tensor attention_weights(const Tensor& q, const Tensor& k, bool causal) {
  // q (T_q, d), k (T_k, d). The scores q·kᵀ (module 01's matmul accepts the view
  // k.transpose(0, 1)), times 1/√d computed in double from d = q's number of COLUMNS; plus
  // causal_mask(T_q, T_k) when causal (whatever T_q is: a lone query is query 0 and sees key 0
  // only). Then module 02's softmax over the keys, the last dimension, so that every row (one
  // query) sums to 1.
  throw kiln::NotImplemented();
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  // Check the shapes before anything is computed, each failure a ShapeError naming both shapes:
  //   q and k: both 2-D or both 3-D; with 3-D, the same batch size (1 against 2 too: the batch
  //   does not broadcast); the same last size d
  //   k and v: v of the same rank; with 3-D, the same batch size; v.size(-2) == k.size(-2) (T_k)
  // Then return AttentionFunction::apply(q, k, v, causal): the node computes the values and, when
  // an input requires grad, records itself.
  throw kiln::NotImplemented();
}

AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                      const Tensor& grad_output) {
  // P = weights (T_q, T_k), dO = grad_output (T_q, d_v), scale = 1/√d with d = q's columns:
  //   value = Pᵀ·dO
  //   dP    = dO·Vᵀ
  //   dS    = softmax_backward(P, dP): P ⊙ (dP - rowsum(dP ⊙ P)), module 02's
  //   query = dS·K·scale
  //   key   = dSᵀ·Q·scale
  // Each gradient has the shape of the tensor it belongs to; transpose(0, 1) gives a view.
  throw kiln::NotImplemented();
}

Tensor AttentionFunction::forward() {
  // inputs = {q, k, v}. 2-D: weights = attention_weights(q, k, causal) and return weights·v.
  // 3-D: the same for every batch item b separately, on batch_item(q, b), batch_item(k, b) and
  // batch_item(v, b); keep weights = stack(every item's P) and return stack(every item's P·v).
  throw kiln::NotImplemented();
}

std::vector<Tensor> AttentionFunction::backward(const Tensor& grad_output) {
  // {dQ, dK, dV} in the order of inputs. 2-D: attention_backward with the saved weights.
  // 3-D: attention_backward on item b of q, k, v, weights and grad_output, for every b, and
  // stack each of the three gradients.
  throw kiln::NotImplemented();
}

}  // namespace kiln
