// Given: the batch views the attention loops walk, and the MultiHeadAttention layer's
// initialisation and forward(), which only pass things on to your multi_head_attention.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kiln/attention.h"

namespace kiln {

Tensor batch_item(const Tensor& t, std::int64_t b) {
  if (t.dim() != 3) throw ShapeError("batch_item() needs a (B, rows, cols) tensor, got " + to_string(t.shape()));
  if (b < 0 || b >= t.shape()[0]) {
    throw IndexError("batch item " + std::to_string(b) + " of a tensor of shape " + to_string(t.shape()));
  }
  // Item b starts b items into the storage and keeps the strides of the last two dimensions.
  return make_view(t, {t.shape()[1], t.shape()[2]}, {t.strides()[1], t.strides()[2]}, t.offset() + b * t.strides()[0]);
}

Tensor stack(const std::vector<Tensor>& items) {
  if (items.empty()) throw ShapeError("stack() needs at least one tensor");
  const Shape item_shape = items.front().shape();
  if (item_shape.size() != 2) throw ShapeError("stack() needs 2-D tensors, got " + to_string(item_shape));
  const std::int64_t n = static_cast<std::int64_t>(items.size());
  // out (N, rows, cols), row-major: item n fills rows·cols consecutive floats.
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(n * numel(item_shape)));
  for (const Tensor& item : items) {
    if (item.shape() != item_shape) {
      throw ShapeError("stack() needs tensors of one shape, got " + to_string(item_shape) + " and " +
                       to_string(item.shape()));
    }
    const std::vector<float> item_values = item.to_vector();
    values.insert(values.end(), item_values.begin(), item_values.end());
  }
  return Tensor({n, item_shape[0], item_shape[1]}, std::move(values));
}

MultiHeadAttention::MultiHeadAttention(std::int64_t model_dim, std::int64_t heads, WichmannHill& generator)
    : model_dim(model_dim), heads(heads) {
  if (model_dim < 1 || heads < 1 || model_dim % heads != 0) {
    throw ShapeError("MultiHeadAttention needs heads that divide model_dim, got model_dim " + std::to_string(model_dim) +
                     " and heads " + std::to_string(heads));
  }
  head_dim = model_dim / heads;
  // Xavier uniform: fan_in = fan_out = model_dim, so bound = √(6 / (2·model_dim)).
  const double bound = std::sqrt(6.0 / static_cast<double>(model_dim + model_dim));
  const auto draw = [&] {
    // (model_dim, model_dim), drawn in row-major order.
    std::vector<float> values(static_cast<std::size_t>(model_dim * model_dim));
    for (float& w : values) w = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
    Tensor w({model_dim, model_dim}, std::move(values));
    w.set_requires_grad(true);
    return w;
  };
  w_query = draw();
  w_key = draw();
  w_value = draw();
  w_out = draw();
}

MultiHeadAttention::MultiHeadAttention(std::int64_t model_dim, std::int64_t heads, std::uint64_t seed) {
  WichmannHill generator(seed);
  *this = MultiHeadAttention(model_dim, heads, generator);
}

Tensor MultiHeadAttention::forward(const Tensor& x, bool causal) const {
  return multi_head_attention(x, x, x, w_query, w_key, w_value, w_out, heads, causal);
}

}  // namespace kiln
