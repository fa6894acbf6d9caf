// Milestone: a small GPT learns to write fortunes.
//
// The text of Debian's `fortunes` collection (milestones/support/text.h: about 730 kB of
// quotations, jokes and aphorisms, every tenth fortune held out), as characters of your module
// 10's vocabulary. The model is your module 13's GPT; every step trains it on a batch of windows
// of `context` characters drawn at random from the training text, each position predicting the
// next character (your lm_loss), with your module 07's Adam on a cosine schedule.
//
// What goes to the grader, which judges it all itself:
//   validation   the logits of the held-out text read in windows of `context` characters: row r
//                predicts character r + 1, so the grader computes the loss from the text alone
//   causal-a/b   one held-out window, and the same window with the character at position 40
//                changed: rows 0 to 39 must not change (no position sees the future)
//   repeated     a window of one character repeated: the rows must differ, because attention over
//                equal tokens can only tell positions apart through the position embeddings
// Samples of the trained model are printed at the end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tokenization.h"
#include "kiln/transformer.h"
#include "milestone.h"
#include "text.h"

using namespace kiln;

namespace {

constexpr std::int64_t context = 64;
constexpr std::int64_t batch = 16;
constexpr std::int64_t changed_position = 40;

// The logits (T, V) of one window of ids, without a graph.
Tensor window_logits(nn::GPT& model, const Indices& window) {
  const Tensor logits = model(nn::token_tensor(window, 1));  // (1, T, V)
  return logits.reshape({static_cast<std::int64_t>(window.size()), model.config.vocab_size});
}

}  // namespace

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  const milestone::TextData text = milestone::load_fortunes(settings);
  // The characters of the whole corpus, so that the held-out text has no unknown character.
  const CharVocab vocab(text.train + text.validation);
  const TokenIds train_ids = vocab.encode(text.train);
  const TokenIds validation_ids = vocab.encode(text.validation);

  const nn::GPTConfig config{.vocab_size = vocab.size(), .max_length = context, .model_dim = 96, .heads = 4, .layers = 2};
  nn::GPT model(config, settings.seed);
  milestone::note("GPT: " + std::to_string(vocab.size()) + " characters, context " + std::to_string(context) +
                  ", D = 96, 4 heads, 2 blocks; batches of " + std::to_string(batch) + " windows");

  const float base_lr = 3e-3f;
  optim::Adam optimizer(model.parameters(), base_lr);
  WichmannHill draws(settings.seed + 1);
  const std::int64_t steps = settings.steps > 0 ? settings.steps : 200;
  const int total_steps = static_cast<int>(steps * settings.epochs);

  auto named = model.named_parameters();
  for (auto& [name, t] : named) t = t.clone();
  milestone::parameters("initial", named);
  milestone::begin(settings.epochs, steps);
  int taken = 0;
  for (int epoch = 1; epoch <= settings.epochs; ++epoch) {
    const auto started = std::chrono::steady_clock::now();
    model.train();
    double total = 0;
    for (std::int64_t s = 1; s <= steps; ++s) {
      // A batch (B, T) of windows and their targets, the same windows shifted by one character.
      Indices inputs, targets;
      for (std::int64_t b = 0; b < batch; ++b) {
        const auto start = static_cast<std::size_t>(draws.next() * static_cast<double>(train_ids.size() - context - 1));
        inputs.insert(inputs.end(), train_ids.begin() + start, train_ids.begin() + start + context);
        targets.insert(targets.end(), train_ids.begin() + start + 1, train_ids.begin() + start + context + 1);
      }
      optimizer.set_learning_rate(optim::cosine_lr(base_lr, base_lr / 10, taken++, total_steps));
      optimizer.zero_grad();
      Tensor loss = nn::lm_loss(model(nn::token_tensor(inputs, batch)), targets);
      loss.backward();
      optimizer.step();
      total += loss.item();
      milestone::step(epoch, s, loss.item());
    }
    milestone::epoch_done(epoch, total / static_cast<double>(steps),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  milestone::parameters("final", model.named_parameters());

  model.eval();
  nn::NoGradGuard no_grad(model);
  // The held-out text in windows: row r of the logits predicts character r + 1.
  const std::int64_t rows = std::min<std::int64_t>(settings.test_count > 0 ? settings.test_count : INT64_MAX,
                                                   static_cast<std::int64_t>(validation_ids.size()) - 1);
  std::vector<float> values;
  for (std::int64_t start = 0; start < rows; start += context) {
    const Indices window(validation_ids.begin() + start, validation_ids.begin() + std::min(rows, start + context));
    const std::vector<float> v = window_logits(model, window).to_vector();
    values.insert(values.end(), v.begin(), v.end());
  }
  milestone::logits("validation", Tensor({rows, config.vocab_size}, values));

  // Causality: the same window with one character changed at changed_position.
  Indices window(validation_ids.begin(), validation_ids.begin() + context);
  milestone::logits("causal-a", window_logits(model, window));
  window[changed_position] = (window[changed_position] + 1) % config.vocab_size;
  milestone::logits("causal-b", window_logits(model, window));
  // Position: one character, the space, repeated.
  const Indices repeated(context, vocab.encode(" ")[0]);
  milestone::logits("repeated", window_logits(model, repeated));

  // Samples: three continuations of a prompt, at temperature 0.8 among the 10 likeliest characters.
  WichmannHill sampling(settings.seed + 2);
  for (const std::string prompt : {"The ", "A man ", "Love "}) {
    const Indices out = nn::generate(model, vocab.encode(prompt), 200, 0.8, 10, sampling);
    std::string sample = vocab.decode(out);
    if (const auto end = sample.find("\n%\n"); end != std::string::npos) sample.resize(end + 1);
    milestone::note("sample:\n" + sample);
  }
  return 0;
}
