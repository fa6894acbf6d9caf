// Scaled dot-product attention: the causal mask, the weights, and the graph node's forward and
// backward passes.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/activations.h"
#include "kiln/attention.h"

namespace kiln {

namespace {

// "q (3, 4) and k (5, 3)": the two shapes that disagree, for a ShapeError.
std::string both(const char* a_name, const Tensor& a, const char* b_name, const Tensor& b) {
  return std::string(a_name) + " " + to_string(a.shape()) + " and " + b_name + " " + to_string(b.shape());
}

}  // namespace

Tensor causal_mask(std::int64_t t_q, std::int64_t t_k) {
  // mask (t_q, t_k), row-major: row = query position, column = key position.
  Tensor mask = Tensor::zeros({t_q, t_k});
  if (mask.numel() == 0) return mask;
  float* values = mask.data();
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  for (std::int64_t query = 0; query < t_q; ++query) {
    for (std::int64_t key = 0; key < t_k; ++key) {
      if (key > query) values[query * t_k + key] = minus_infinity;  // a later position: hidden
    }
  }
  return mask;
}

Tensor attention_weights(const Tensor& q, const Tensor& k, bool causal) {
  const std::int64_t width = q.shape()[1];  // d, the width of a query and of a key
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(width)));
  // scores (T_q, T_k): row i holds query i's match with every key.
  Tensor scores = matmul(q, k.transpose(0, 1)) * scale;
  if (causal) scores = scores + causal_mask(q.shape()[0], k.shape()[0]);
  return softmax(scores, -1);  // over the keys: every row sums to 1
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const std::int64_t rank = q.dim();
  if ((rank != 2 && rank != 3) || k.dim() != rank) {
    throw ShapeError("attention needs q, k, v all 2-D or all 3-D, got " + both("q", q, "k", k));
  }
  if (v.dim() != rank) throw ShapeError("attention needs q, k, v all 2-D or all 3-D, got " + both("k", k, "v", v));
  if (rank == 3 && k.shape()[0] != q.shape()[0]) throw ShapeError("attention batch sizes differ: " + both("q", q, "k", k));
  if (rank == 3 && v.shape()[0] != k.shape()[0]) throw ShapeError("attention batch sizes differ: " + both("k", k, "v", v));
  if (k.size(-1) != q.size(-1)) throw ShapeError("keys must have the queries' width d: " + both("q", q, "k", k));
  if (v.size(-2) != k.size(-2)) throw ShapeError("one value per key needed: " + both("k", k, "v", v));
  return AttentionFunction::apply(q, k, v, causal);
}

AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                      const Tensor& grad_output) {
  const std::int64_t width = q.shape()[1];
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(width)));
  AttentionGradients grads;
  grads.value = matmul(weights.transpose(0, 1), grad_output);            // Pᵀ·dO: (T_k, d_v)
  const Tensor grad_weights = matmul(grad_output, v.transpose(0, 1));    // dP = dO·Vᵀ: (T_q, T_k)
  const Tensor grad_scores = softmax_backward(weights, grad_weights, -1);  // dS = P ⊙ (dP - rowsum(dP ⊙ P))
  grads.query = matmul(grad_scores, k) * scale;                          // dS·K/√d: (T_q, d)
  grads.key = matmul(grad_scores.transpose(0, 1), q) * scale;            // dSᵀ·Q/√d: (T_k, d)
  return grads;
}

Tensor AttentionFunction::forward() {
  const Tensor& q = inputs[0];
  const Tensor& k = inputs[1];
  const Tensor& v = inputs[2];
  if (q.dim() == 2) {
    weights = attention_weights(q, k, causal);
    return matmul(weights, v);
  }
  // A batch: every item is a sequence of its own, attended to separately.
  std::vector<Tensor> item_weights, item_outputs;
  for (std::int64_t b = 0; b < q.shape()[0]; ++b) {
    const Tensor p = attention_weights(batch_item(q, b), batch_item(k, b), causal);
    item_weights.push_back(p);
    item_outputs.push_back(matmul(p, batch_item(v, b)));
  }
  weights = stack(item_weights);
  return stack(item_outputs);
}

std::vector<Tensor> AttentionFunction::backward(const Tensor& grad_output) {
  const Tensor& q = inputs[0];
  const Tensor& k = inputs[1];
  const Tensor& v = inputs[2];
  if (q.dim() == 2) {
    const AttentionGradients g = attention_backward(q, k, v, weights, grad_output);
    return {g.query, g.key, g.value};
  }
  std::vector<Tensor> grad_q, grad_k, grad_v;
  for (std::int64_t b = 0; b < q.shape()[0]; ++b) {
    const AttentionGradients g = attention_backward(batch_item(q, b), batch_item(k, b), batch_item(v, b),
                                                    batch_item(weights, b), batch_item(grad_output, b));
    grad_q.push_back(g.query);
    grad_k.push_back(g.key);
    grad_v.push_back(g.value);
  }
  return {stack(grad_q), stack(grad_k), stack(grad_v)};
}

}  // namespace kiln
