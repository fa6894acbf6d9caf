// Multi-head attention: splitting the width into heads, merging them back, and the four
// projections around scaled dot-product attention, all as operations of module 06's graph.
#include <string>

#include "kiln/attention.h"

namespace kiln {

namespace {

// "(2, 5, 7) into 3 heads": for a ShapeError.
std::string shape_and_heads(const Tensor& x, std::int64_t heads) {
  return to_string(x.shape()) + " into " + std::to_string(heads) + " heads";
}

// x (B, T, D_in)·w (D_in, D_out) -> (B, T, D_out): each of the B·T positions times w.
Tensor project(const Tensor& x, const Tensor& w) {
  if (x.dim() != 3) throw ShapeError("a projection needs a (B, T, D) input, got " + to_string(x.shape()));
  const std::int64_t batch = x.shape()[0], length = x.shape()[1];
  const Tensor rows = autograd::reshape(x, {batch * length, x.shape()[2]});  // (B·T, D_in)
  return autograd::reshape(autograd::matmul(rows, w), {batch, length, w.shape()[1]});
}

}  // namespace

Tensor split_heads(const Tensor& x, std::int64_t heads) {
  if (x.dim() != 3 || heads < 1 || x.shape()[2] % heads != 0) {
    throw ShapeError("cannot split " + shape_and_heads(x, heads));
  }
  const std::int64_t batch = x.shape()[0], length = x.shape()[1];
  const std::int64_t head_dim = x.shape()[2] / heads;
  // (B, T, H·d_h) -> (B, T, H, d_h): column h·d_h + e becomes (h, e).
  const Tensor by_head = autograd::reshape(x, {batch, length, heads, head_dim});
  // -> (B, H, T, d_h): the positions of one head next to each other.
  const Tensor heads_first = autograd::transpose(by_head, 1, 2);
  // -> (B·H, T, d_h): sequence b·H + h is head h of item b.
  return autograd::reshape(heads_first, {batch * heads, length, head_dim});
}

Tensor merge_heads(const Tensor& x, std::int64_t heads) {
  if (x.dim() != 3 || heads < 1 || x.shape()[0] % heads != 0) {
    throw ShapeError("cannot merge " + shape_and_heads(x, heads));
  }
  const std::int64_t batch = x.shape()[0] / heads;
  const std::int64_t length = x.shape()[1], head_dim = x.shape()[2];
  // (B·H, T, d_h) -> (B, H, T, d_h): sequence b·H + h back to (b, h).
  const Tensor heads_first = autograd::reshape(x, {batch, heads, length, head_dim});
  // -> (B, T, H, d_h): the heads of one position next to each other.
  const Tensor positions_first = autograd::transpose(heads_first, 1, 2);
  // -> (B, T, H·d_h): head h in columns h·d_h .. h·d_h + d_h - 1.
  return autograd::reshape(positions_first, {batch, length, heads * head_dim});
}

Tensor multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& w_query,
                            const Tensor& w_key, const Tensor& w_value, const Tensor& w_out, std::int64_t heads,
                            bool causal) {
  const Tensor q = split_heads(project(query, w_query), heads);  // (B·H, T_q, d_h)
  const Tensor k = split_heads(project(key, w_key), heads);      // (B·H, T_k, d_h)
  const Tensor v = split_heads(project(value, w_value), heads);  // (B·H, T_k, d_h)
  const Tensor attended = scaled_dot_product_attention(q, k, v, causal);  // (B·H, T_q, d_h)
  return project(merge_heads(attended, heads), w_out);                    // (B, T_q, D_out)
}

}  // namespace kiln
