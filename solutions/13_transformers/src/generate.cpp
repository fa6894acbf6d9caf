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
  if (logits.empty()) throw std::invalid_argument("sample_token needs at least one logit");
  if (!(temperature >= 0.0)) throw std::invalid_argument("sample_token needs a temperature >= 0");
  const auto vocab = static_cast<std::int64_t>(logits.size());
  if (temperature == 0.0) {
    // Greedy: the first of the largest logits.
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
  }
  // The candidates: ids ranked by logit, largest first, equal logits by the lower id.
  std::vector<std::int64_t> ranked(static_cast<std::size_t>(vocab));
  std::iota(ranked.begin(), ranked.end(), std::int64_t{0});
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::int64_t a, std::int64_t b) { return logits[a] > logits[b]; });
  const std::int64_t count = top_k <= 0 || top_k >= vocab ? vocab : top_k;
  const double largest = logits[ranked[0]];
  std::vector<double> probability(static_cast<std::size_t>(vocab), 0.0);
  double total = 0.0;
  for (std::int64_t rank = 0; rank < count; ++rank) {
    const std::int64_t id = ranked[rank];
    probability[id] = std::exp((logits[id] - largest) / temperature);
    total += probability[id];
  }
  std::int64_t last_candidate = 0;
  for (std::int64_t id = 0; id < vocab; ++id) {
    probability[id] /= total;
    if (probability[id] > 0.0) last_candidate = id;
  }
  // One draw; walk the ids in order until the cumulative probability exceeds it.
  const double u = generator.next();
  double cumulative = 0.0;
  for (std::int64_t id = 0; id < vocab; ++id) {
    cumulative += probability[id];
    if (cumulative > u) return id;
  }
  return last_candidate;
}

Indices generate(GPT& model, const Indices& prompt, std::int64_t n_new, double temperature, std::int64_t top_k,
                 WichmannHill& generator) {
  if (prompt.empty()) throw std::invalid_argument("generate needs a prompt of at least one token");
  if (n_new < 0) throw std::invalid_argument("generate needs n_new >= 0");
  model.eval();
  NoGradGuard no_grad(model);
  Indices sequence = prompt;
  for (std::int64_t step = 0; step < n_new; ++step) {
    // The context: at most max_length of the latest tokens.
    const auto length = std::min<std::int64_t>(static_cast<std::int64_t>(sequence.size()), model.config.max_length);
    const Indices context(sequence.end() - length, sequence.end());
    const Tensor logits = model(token_tensor(context, 1));  // (1, T, V)
    const std::int64_t vocab = logits.shape()[2];
    const std::vector<float> all = logits.to_vector();
    const std::vector<float> last(all.end() - vocab, all.end());  // position T - 1
    sequence.push_back(sample_token(last, temperature, top_k, generator));
  }
  return sequence;
}

}  // namespace kiln::nn
