// Multi-head attention: splitting the width into heads, merging them back, and the four
// projections around scaled dot-product attention, all as operations of module 06's graph.
//
// Use autograd::reshape, autograd::transpose and autograd::matmul throughout, not the Tensor
// members: x.reshape(...) computes the same values but records nothing, and the gradient then
// stops there. A small helper that projects (B, T, D_in) by a (D_in, D_out) weight (reshape to
// (B·T, D_in), matmul, reshape to (B, T, D_out)) is used four times. Hand it x itself, not
// x.contiguous(): an input may be a view (a transposed tensor), and contiguous() of a view is a
// plain copy outside the graph; autograd::reshape copies a view where it must, and records it.
#include <string>

#include "kiln/attention.h"

namespace kiln {

Tensor split_heads(const Tensor& x, std::int64_t heads) {
  // x (B, T, H·d_h); ShapeError naming x's shape and heads unless x is 3-D and heads divides
  // its last size (every heads >= 1 divides 0: (1, 2, 0) in 2 heads is (2, 2, 0)). d_h = D / H
  // also when x has no positions: (2, 0, 6) in 3 heads is (6, 0, 2). Three steps:
  //   reshape to (B, T, H, d_h)      column h·d_h + e becomes (h, e)
  //   transpose dimensions 1 and 2   (B, H, T, d_h): one head's positions together
  //   reshape to (B·H, T, d_h)       sequence b·H + h is head h of item b
  throw kiln::NotImplemented();
}

Tensor merge_heads(const Tensor& x, std::int64_t heads) {
  // x (B·H, T, d_h); ShapeError naming x's shape and heads unless x is 3-D and heads divides
  // its first size, also when x holds no elements ((5, 0, 2) in 3 heads, which a reshape to
  // (1, 3, 0, 2) would accept). split_heads backwards: reshape to (B, H, T, d_h), transpose
  // dimensions 1 and 2, reshape to (B, T, H·d_h).
  throw kiln::NotImplemented();
}

Tensor multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& w_query,
                            const Tensor& w_key, const Tensor& w_value, const Tensor& w_out, std::int64_t heads,
                            bool causal) {
  // Project query by w_query, key by w_key and value by w_value, split each into heads, attend
  // with scaled_dot_product_attention(q, k, v, causal) on the (B·H, T, d_h) sequences, merge the
  // heads and project the result by w_out: (B, T_q, D_out).
  throw kiln::NotImplemented();
}

}  // namespace kiln
