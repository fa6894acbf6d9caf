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
  // The room the prompt leaves, compared with n_new: prompt.size() + n_new would overflow an
  // int64_t for an n_new near its largest value, and a wrapped sum would pass the check.
  const auto room = model.config.max_length - static_cast<std::int64_t>(prompt.size());
  if (n_new > room) {
    throw std::invalid_argument("generate_cached: a prompt of " + std::to_string(prompt.size()) + " tokens and " +
                                std::to_string(n_new) + " new tokens are longer than max_length " +
                                std::to_string(model.config.max_length));
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
