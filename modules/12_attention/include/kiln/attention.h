// Module 12, Attention: every position of a sequence reads a weighted mix of the others.
//
// Scaled dot-product attention of queries Q, keys K and values V:
//   S = Q·Kᵀ / √d + M          scores: how well query i matches key j, with d the key width
//   P = softmax(S) along each row (over the keys), so every row of P sums to 1
//   O = P·V                    row i of the output is the P[i, :]-weighted mix of V's rows
// M is 0 everywhere without a mask. The causal mask M lets query i see the keys j <= i only:
//   M[i, j] = 0 for j <= i,  M[i, j] = -infinity for j > i   (top-left aligned, as PyTorch's
//   is_causal: query 0 sees key 0 even when T_q != T_k, so no row is ever fully masked).
// -infinity, not a "very negative" number such as -1e9: e^(-inf - m) is exactly 0 for any finite
// row maximum m, however large the scores, so a masked key gets exactly no weight. A finite
// value only works while every score stays far above it; -1e4, a common choice in half
// precision, already loses to scores of 1e4.
//
// Layouts, all row-major float32:
//   one sequence   q (T_q, d), k (T_k, d), v (T_k, d_v)  ->  output (T_q, d_v)
//                  weights P (T_q, T_k): row i = query i, column j = key j
//   a batch        q (B, T_q, d), k (B, T_k, d), v (B, T_k, d_v)  ->  output (B, T_q, d_v)
//                  item b of every tensor is one independent sequence: the batch is a loop over
//                  b (batch_item / stack below), never flattened, so no sequence sees another
//   heads          x (B, T, H·d_h): the H·d_h columns of a position hold head 0's d_h values,
//                  then head 1's, ...: x[b, t, h·d_h + e] is value e of head h
//                  split: (B·H, T, d_h) with sequence b·H + h = head h of batch item b
//   projections    W_q, W_k, W_v (D_in, H·d_h), W_o (H·d_h, D_out): a projection of (B, T, D_in)
//                  multiplies each of the B·T rows by W, as (B·T, D_in)·(D_in, H·d_h)
//
// Errors: ShapeError naming both shapes (e.g. "(3, 4)" and "(5, 3)") for inputs that do not fit,
// before anything is computed.
//
// Cost: Q·Kᵀ and P·V are T_q·T_k·d and T_q·T_k·d_v multiply-adds, and P holds T_q·T_k floats:
// O(T²·d) time and O(T²) memory in the sequence length T.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Given (src/attention_given.cpp)

// Item b of a 3-D tensor t (B, rows, cols), as a 2-D view (rows, cols) of the same storage.
// Throws ShapeError when t is not 3-D, IndexError when b is not in [0, B).
Tensor batch_item(const Tensor& t, std::int64_t b);

// The (N, rows, cols) tensor whose item n is a copy of items[n]; all items are 2-D of one shape.
// Throws ShapeError when they are not, or when items is empty.
Tensor stack(const std::vector<Tensor>& items);

// ---------------------------------------------------------------------------------------------
// Attention of one sequence (yours: src/attention.cpp)

// The causal mask M (t_q, t_k): 0 where key j <= query i, -infinity where j > i.
// causal_mask(3, 3) = [[0, -inf, -inf], [0, 0, -inf], [0, 0, 0]]. Either size may be 0:
// causal_mask(0, 4) is a (0, 4) mask with no elements.
Tensor causal_mask(std::int64_t t_q, std::int64_t t_k);

// P = softmax(q·kᵀ/√d + M) along each row, with M = causal_mask(T_q, T_k) when causal, else 0.
//   q (T_q, d), k (T_k, d)  ->  P (T_q, T_k), every row summing to 1
// One query is no exception: with T_q = 1 it is query 0, and causal_mask(1, T_k) = [[0, -inf,
// ...]] gives it the weights [1, 0, ..., 0].
// Uses module 02's softmax, which takes out each row's maximum: scores of 1e4 stay finite.
Tensor attention_weights(const Tensor& q, const Tensor& k, bool causal);

// softmax(q·kᵀ/√d + M)·v for one sequence (2-D inputs) or a batch of them (3-D inputs), through
// AttentionFunction so that gradients reach q, k and v when they require grad. Checks the shapes
// first: q, k, v all 2-D or all 3-D, the same batch size B (a batch of 1 does not broadcast, as
// it does in PyTorch), k's width d equal to q's, and v's number of rows T_k equal to k's;
// otherwise ShapeError naming the two shapes that disagree (when all three are of another rank,
// so that none disagree, any one's shape).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal = false);

// The gradients of a loss L with respect to q, k and v of one sequence, given P (the forward
// pass's weights) and dO = dL/d(output) (T_q, d_v). With dP = dO·Vᵀ:
struct AttentionGradients {
  Tensor query;  // dQ = dS·K / √d        (T_q, T_k)·(T_k, d) = (T_q, d)
  Tensor key;    // dK = dSᵀ·Q / √d       (T_k, T_q)·(T_q, d) = (T_k, d)
  Tensor value;  // dV = Pᵀ·dO            (T_k, T_q)·(T_q, d_v) = (T_k, d_v)
};
// where dS = P ⊙ (dP - rowsum(dP ⊙ P)) is the gradient of the scores S (module 02's
// softmax_backward(P, dP)). A masked score had P = 0, so it gets dS = 0: nothing more to mask.
AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                      const Tensor& grad_output);

// Attention as a node of module 06's graph.
//   inputs: {q, k, v}, all 2-D or all 3-D (shapes as above);  output: (T_q, d_v) or (B, T_q, d_v)
struct AttentionFunction : autograd::Function {
  bool causal = false;
  // P, kept by forward() for backward(): (T_q, T_k), or (B, T_q, T_k) for a batch.
  Tensor weights;

  // Yours (src/attention.cpp): P = attention_weights(q, k, causal) and P·v, for every batch item
  // b of a 3-D input separately (batch_item, then stack).
  Tensor forward() override;
  // Yours (src/attention.cpp): {dQ, dK, dV} from attention_backward, per batch item for 3-D.
  std::vector<Tensor> backward(const Tensor& grad_output) override;

  // Given: records the node, like every module 06 operation.
  static Tensor apply(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
    auto node = std::make_shared<AttentionFunction>();
    node->causal = causal;
    return Function::apply(node, {q, k, v});
  }
};

// ---------------------------------------------------------------------------------------------
// Multi-head attention (yours: src/multihead.cpp)
//
// Every function here is built from module 06's differentiable operations (autograd::reshape,
// autograd::transpose, autograd::matmul) and scaled_dot_product_attention, so that a gradient
// flows back through the heads to the inputs and to all four weight matrices. On tensors that
// do not require grad the same operations just compute values.

// (B, T, H·d_h) -> (B·H, T, d_h): sequence b·H + h holds head h of batch item b, that is,
// split_heads(x)[b·H + h, t, e] = x[b, t, h·d_h + e].
// Throws ShapeError naming x's shape and `heads` when x is not 3-D, heads is below 1, or heads
// does not divide its last size. Every heads >= 1 divides a last size of 0: an empty (1, 2, 0) x
// splits into 2 heads as (2, 2, 0). An x with no positions or no batch items splits like any
// other, d_h = D / H: (2, 0, 6) into 3 heads is (6, 0, 2).
Tensor split_heads(const Tensor& x, std::int64_t heads);

// The inverse of split_heads: (B·H, T, d_h) -> (B, T, H·d_h), head h back in columns
// h·d_h .. h·d_h + d_h - 1. Throws ShapeError naming the shape and `heads` when x is not 3-D,
// heads is below 1, or heads does not divide its first size, also when x holds no elements
// ((5, 0, 2) in 3 heads); (6, 0, 2) in 3 heads merges into (2, 0, 6).
Tensor merge_heads(const Tensor& x, std::int64_t heads);

// Multi-head attention:
//   Q = split_heads(query·W_q), K = split_heads(key·W_k), V = split_heads(value·W_v)
//   output = merge_heads(scaled_dot_product_attention(Q, K, V, causal))·W_o
// query (B, T_q, D_in), key and value (B, T_k, D_in); W_q, W_k, W_v (D_in, H·d_h);
// W_o (H·d_h, D_out)  ->  output (B, T_q, D_out). Each head attends with its own d_h columns
// and the scale 1/√d_h. Every step is recorded, so that a gradient flows back through the heads
// to the inputs (also inputs that are views, such as a transposed tensor) and to all four weights.
Tensor multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& w_query,
                            const Tensor& w_key, const Tensor& w_value, const Tensor& w_out, std::int64_t heads,
                            bool causal = false);

// Self-attention with its own weights: query = key = value = x.
class MultiHeadAttention {
 public:
  // Given: MultiHeadAttention(model_dim, heads, generator) with WichmannHill(seed).
  MultiHeadAttention(std::int64_t model_dim, std::int64_t heads, std::uint64_t seed = 0);

  // Given. Throws ShapeError naming model_dim and heads unless heads divides model_dim
  // (head_dim = model_dim / heads). The four weights are (model_dim, model_dim), Xavier-uniform:
  //   bound = √(6 / (fan_in + fan_out)) = √(3 / model_dim), computed in double
  //   each value float(bound·(2u - 1)) for the next u = generator.next(), drawn in row-major
  //   order, w_query first, then w_key, w_value and w_out; all four require grad.
  // Uniform in [-bound, bound) has variance bound²/3 = 2 / (fan_in + fan_out): Glorot and
  // Bengio's compromise between keeping the forward and the backward signal's spread.
  MultiHeadAttention(std::int64_t model_dim, std::int64_t heads, WichmannHill& generator);

  // Given: multi_head_attention(x, x, x, w_query, w_key, w_value, w_out, heads, causal).
  //   x (B, T, model_dim)  ->  (B, T, model_dim)
  Tensor forward(const Tensor& x, bool causal = false) const;

  std::int64_t model_dim = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  Tensor w_query;  // (model_dim, model_dim) = (D_in, H·d_h)
  Tensor w_key;    // (model_dim, model_dim)
  Tensor w_value;  // (model_dim, model_dim)
  Tensor w_out;    // (model_dim, model_dim) = (H·d_h, D_out)
};

}  // namespace kiln
