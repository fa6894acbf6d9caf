// Generation with a key-value cache: the prompt once, then one token per step.
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/kv_cache.h"

namespace kiln::nn {

Indices generate_cached(GPT& model, const Indices& prompt, std::int64_t n_new, double temperature,
                        std::int64_t top_k, WichmannHill& generator) {
  if (prompt.empty()) throw std::invalid_argument("generate_cached needs a prompt of at least one token");
  if (n_new < 0) throw std::invalid_argument("generate_cached needs n_new >= 0");
  const auto total = static_cast<std::int64_t>(prompt.size()) + n_new;
  if (total > model.config.max_length) {
    throw std::invalid_argument("generate_cached: prompt and new tokens, " + std::to_string(total) +
                                ", are longer than max_length " + std::to_string(model.config.max_length));
  }
  model.eval();
  KVCache cache(model.config);
  std::vector<float> logits;
  for (const std::int64_t token : prompt) logits = forward_step(model, cache, token);
  Indices sequence = prompt;
  for (std::int64_t step = 0; step < n_new; ++step) {
    const std::int64_t next = sample_token(logits, temperature, top_k, generator);
    sequence.push_back(next);
    if (step + 1 < n_new) logits = forward_step(model, cache, next);
  }
  return sequence;
}

}  // namespace kiln::nn
