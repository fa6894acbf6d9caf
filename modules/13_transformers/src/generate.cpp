// Generation: one token at a time, greedy or sampled with temperature and top-k.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "kiln/transformer.h"

namespace kiln::nn {

std::int64_t sample_token(const std::vector<float>& logits, double temperature, std::int64_t top_k,
                          WichmannHill& generator) {
  // std::invalid_argument for no logits or a negative temperature. The refusal comes before any
  // draw: the generator is left as it was.
  // temperature 0: the first index of the largest logit, and no draw.
  // Otherwise (any temperature above 0, however small, samples and draws):
  //   rank the ids by logit, largest first, equal logits by the lower id (std::stable_sort of
  //   0 .. V-1 does that); the first top_k are the candidates (all V when top_k <= 0 or >= V)
  //   p[id] = e^((logit - largest)/temperature) for a candidate (the difference first: logit /
  //   temperature alone overflows at 1e-308), 0 for any other id; divide by the candidates' sum
  //   (all in double, the difference too: logits ±3e38 are 6e38 apart, past FLT_MAX)
  //   u = generator.next(), once; walk id = 0, 1, ..., V-1 adding p[id], and return the first id
  //   at which the sum exceeds u (none: the largest candidate id).
  throw kiln::NotImplemented();
}

Indices generate(GPT& model, const Indices& prompt, std::int64_t n_new, double temperature, std::int64_t top_k,
                 WichmannHill& generator) {
  // std::invalid_argument for an empty prompt or n_new < 0. The refusal comes before any effect:
  // the model stays in the mode it was in, and nothing is drawn. Then model.eval() (the model
  // stays in evaluation mode when generate returns) and a NoGradGuard for the whole loop. Each
  // step: the context is the last min(size, model.config.max_length) tokens of the sequence so
  // far; logits = model(token_tensor(context, 1)), (1, T, V); the next token is sample_token of
  // the V logits at position T - 1; append it.
  // Return prompt + the n_new tokens.
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
