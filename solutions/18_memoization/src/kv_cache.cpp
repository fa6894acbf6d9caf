// The key-value cache: its layout, its size in bytes, and one token's step through the model.
#include <string>
#include <vector>

#include "kiln/attention.h"
#include "kiln/kv_cache.h"

namespace kiln::nn {

KVCache::KVCache(const GPTConfig& config)
    : heads(config.heads), head_dim(config.model_dim / config.heads), max_length(config.max_length) {
  for (std::int64_t layer = 0; layer < config.layers; ++layer) {
    keys.push_back(Tensor::zeros({heads, max_length, head_dim}));  // (H, max_length, d_h)
    values.push_back(Tensor::zeros({heads, max_length, head_dim}));
  }
}

std::int64_t kv_cache_bytes(const GPTConfig& config, std::int64_t length) {
  const std::int64_t bytes_per_float = 4;
  return 2 * config.layers * length * config.model_dim * bytes_per_float;  // K and V
}

std::vector<float> forward_step(GPT& model, KVCache& cache, std::int64_t token) {
  const std::int64_t position = cache.length;
  const std::int64_t width = model.config.model_dim, vocab = model.config.vocab_size;
  if (position >= cache.max_length) {
    throw IndexError("forward_step: position " + std::to_string(position) + " is past the cache's max_length " +
                     std::to_string(cache.max_length));
  }
  if (token < 0 || token >= vocab) {
    throw IndexError("forward_step: token " + std::to_string(token) + " is not in [0, " + std::to_string(vocab) + ")");
  }
  NoGradGuard no_grad(model);
  const std::int64_t heads = cache.heads, head_dim = cache.head_dim;

  // x (1, 1, D): the token's vector plus its position's.
  const float* token_row = model.token_embedding.weight.data() + token * width;
  const float* position_row = model.position_embedding.weight.data() + position * width;
  std::vector<float> embedded(static_cast<std::size_t>(width));
  for (std::int64_t d = 0; d < width; ++d) embedded[d] = token_row[d] + position_row[d];
  Tensor x({1, 1, width}, std::move(embedded));

  for (std::size_t layer = 0; layer < model.blocks.size(); ++layer) {
    const TransformerBlock& block = *model.blocks[layer];
    const CausalSelfAttention& attention = *block.attention;
    const Tensor a = block.ln1->forward(x).reshape({1, width});
    const Tensor q = matmul(a, attention.w_query), k = matmul(a, attention.w_key), v = matmul(a, attention.w_value);

    // Append: row `position` of every head, keys[layer][h, position, e] = k[h·d_h + e].
    float* keys = cache.keys[layer].data();
    float* values = cache.values[layer].data();
    const float* k_data = k.data();
    const float* v_data = v.data();
    for (std::int64_t h = 0; h < heads; ++h) {
      for (std::int64_t e = 0; e < head_dim; ++e) {
        keys[(h * cache.max_length + position) * head_dim + e] = k_data[h * head_dim + e];
        values[(h * cache.max_length + position) * head_dim + e] = v_data[h * head_dim + e];
      }
    }

    // The positions seen so far, 0 .. position, as (H, position + 1, d_h) views of the cache.
    const Shape seen{heads, position + 1, head_dim};
    const Shape strides{cache.max_length * head_dim, head_dim, 1};
    const Tensor seen_keys = make_view(cache.keys[layer], seen, strides, 0);
    const Tensor seen_values = make_view(cache.values[layer], seen, strides, 0);
    // The new token is the last position: it may read every key, so no mask.
    const Tensor attended =
        scaled_dot_product_attention(split_heads(q.reshape({1, 1, width}), heads), seen_keys, seen_values, false);
    const Tensor mixed = matmul(merge_heads(attended, heads).reshape({1, width}), attention.w_out);
    x = x + mixed.reshape({1, 1, width});
    x = x + block.mlp->forward(block.ln2->forward(x));
  }
  const Tensor logits = model.head->forward(model.ln_final->forward(x).reshape({1, width}));  // (1, V)
  cache.length += 1;
  return logits.to_vector();
}

}  // namespace kiln::nn
