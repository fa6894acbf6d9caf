// Generation with a key-value cache: the prompt once, then one token per step.
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/kv_cache.h"

namespace kiln::nn {

Indices generate_cached(GPT& model, const Indices& prompt, std::int64_t n_new, double temperature,
                        std::int64_t top_k, WichmannHill& generator) {
  // std::invalid_argument for an empty prompt, n_new < 0, or prompt.size() + n_new above
  // model.config.max_length, naming max_length (checked before anything else, model.eval()
  // included). n_new is a std::int64_t, compared in 64 bits: 2³² is refused, not wrapped to 0.
  // The length is checked as n_new > max_length − prompt.size(), the room the prompt leaves: the
  // sum prompt.size() + n_new overflows an int64_t for an n_new near its largest value, and
  // 2⁶³ − 1 is refused too. Then
  // model.eval(), before the first forward_step; one KVCache for the model's config. Every prompt
  // token through forward_step; the last logits give the first new token by sample_token(logits,
  // temperature, top_k, generator). Run each new token through forward_step for the next, except
  // the last one. Return prompt + the n_new tokens. n_new = 0 is no shortcut: the prompt still runs
  // (a token outside [0, V) raises forward_step's kiln::IndexError, the model already in
  // evaluation mode) and the model is left in evaluation mode.
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
