// The key-value cache: its layout, its size in bytes, and one token's step through the model.
#include <string>
#include <vector>

#include "kiln/attention.h"
#include "kiln/kv_cache.h"

namespace kiln::nn {

KVCache::KVCache(const GPTConfig& config) {
  // heads = H, head_dim = D/H, max_length from config; for each of config.layers layers, push a
  // zeros tensor (heads, max_length, head_dim) onto keys and another onto values. length stays 0.
  throw kiln::NotImplemented();
}

std::int64_t kv_cache_bytes(const GPTConfig& config, std::int64_t length) {
  // 2 (keys and values) · layers · length · model_dim · 4 bytes, all in std::int64_t.
  throw kiln::NotImplemented();
}

std::vector<float> forward_step(GPT& model, KVCache& cache, std::int64_t token) {
  // position = cache.length. kiln::IndexError naming the position and max_length when the cache is
  // full (checked first); kiln::IndexError naming the token when it is not in [0, V). The token
  // is a std::int64_t, compared in 64 bits: 2³² is refused, not wrapped to the token 0. The token V
  // itself is one row past the end of the (V, D) table: refused, as −1 is. A NoGradGuard for the model
  // (it puts every parameter's requires_grad back when the step returns; never switch it off
  // yourself).
  // x (1, 1, D) = row `token` of token_embedding.weight + row `position` of
  // position_embedding.weight. For every block:
  //   a = ln1(x) as (1, D): the block's own ln1, which keeps its eps (call ln1->forward)
  //   q, k, v = matmul(a, w_query), matmul(a, w_key), matmul(a, w_value)
  //   write k and v into row `position` of the layer's cache: keys[l][h, position, e] = k[h·d_h + e]
  //   attend with module 12: scaled_dot_product_attention(split_heads(q as (1, 1, D), H),
  //     keys (H, position + 1, d_h), values (H, position + 1, d_h), causal?) where the keys and
  //     values are views of rows 0 .. position (make_view with the cache's strides). Think about
  //     which keys the newest position may read before you choose the mask.
  //   x = x + merge_heads(...)·w_out;  x = x + mlp(ln2(x))
  // logits = head(ln_final(x)) as (1, V). cache.length += 1; return the V logits.
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
