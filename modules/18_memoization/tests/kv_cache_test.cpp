// Module 18 checks: one TEST per check in module.yaml.
//
// The cached step is judged against the full forward pass of the same model: every check observes
// both forward_step's logits and GPT::forward's logits (module 13) of one model with the test's
// parameters, and compares them here as plain data. Generation is judged the same way against
// module 13's generate() with the same seed. Parameters, token sequences and some sizes are drawn
// by the run; the helpers (random parameters, load_parameters, the GPT's parameter shapes) are
// module 13's trusted test code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../../13_transformers/tests/transformer_testing.h"
#include "kiln/kv_cache.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using namespace transformer_testing;
using testing::observe;
using testing::random_ints;

using Steps = std::vector<std::vector<float>>;

std::uint64_t drawn_seed(testing::Generator& draw) { return static_cast<std::uint64_t>(draw.below(1'000'000'000'000)); }

// A GPT of the given sizes whose parameters are the test's (inside an observation only).
nn::GPT gpt_with(const GptSizes& s, const Parameters& p) {
  WichmannHill generator(1);
  nn::GPT model(config_of(s), generator);
  load_parameters(model, p);
  return model;
}

std::string sizes_text(const GptSizes& s) {
  return fmt::format("GPT(V = {}, max_length = {}, D = {}, H = {}, N = {})", s.vocab, s.max_length, s.width, s.heads,
                     s.layers);
}

// forward_step of `token` on an empty cache of a GPT of sizes s: how step_logits and
// past_max_length give it the two edges of [0, V), the tokens −1 and V.
auto step_on_empty_cache(const GptSizes& s, const Parameters& p, std::int64_t token) {
  return observe(fmt::format("forward_step of token {} on an empty cache, {}", token, sizes_text(s)), [&] {
    nn::GPT model = gpt_with(s, p);
    nn::KVCache cache(model.config);
    return nn::forward_step(model, cache, token);
  });
}

// A prompt's length as a message says it: "1 token", "3 tokens".
std::string tokens_text(std::size_t count) { return fmt::format("{} token{}", count, count == 1 ? "" : "s"); }

std::string ids_text(const std::vector<std::int64_t>& ids) {
  return testing::list(std::vector<float>(ids.begin(), ids.end()), 16);
}

// generate_cached, greedy, on a fresh model of the test's parameters, observed and named as the
// report quotes it (for the checks of what it refuses).
auto observe_greedy(const GptSizes& s, const Parameters& p, const std::vector<std::int64_t>& prompt, std::int64_t n_new) {
  return observe(fmt::format("generate_cached(model, {}, {}, 0, 0, generator) with {}", ids_text(prompt), n_new,
                             sizes_text(s)),
                 [&] {
                   nn::GPT model = gpt_with(s, p);
                   WichmannHill generator(1);
                   return nn::generate_cached(model, prompt, n_new, 0.0, 0, generator);
                 });
}

// The (1, T) token tensor of ids, built here.
Tensor tokens_of(const std::vector<std::int64_t>& ids) {
  return Tensor({1, static_cast<std::int64_t>(ids.size())}, std::vector<float>(ids.begin(), ids.end()));
}

// The largest |cached - full| over the V logits of `position`, or infinity when the sizes differ.
double step_difference(const std::vector<float>& cached, const TensorData& full, std::int64_t position,
                       std::int64_t vocab) {
  if (static_cast<std::int64_t>(cached.size()) != vocab || full.values.size() < at((position + 1) * vocab))
    return INFINITY;
  double largest = 0;
  for (std::int64_t c = 0; c < vocab; ++c) {
    const double expected = full.values[at(position * vocab + c)];
    largest = std::max(largest, std::abs(static_cast<double>(cached[at(c)]) - expected));
  }
  return largest;
}

// Reports step_logits_wrong where module 13's GPT::forward, which gives the expected logits,
// failed (`error`): module 13's own checks judge it. Judging only: called inside KILN_JUDGE.
void report_forward_failed(const char* file, int line, const std::string& error) {
  testing::report_failure(file, line, "step_logits_wrong", {{"position", "?"}, {"difference", "?"}},
                          "module 13's GPT::forward failed, run grader check 13: " + error);
}

// Reports step_logits_wrong unless forward_step (`call`) gave one result for each of `tokens`
// tokens. Judging only: called inside KILN_JUDGE.
bool expect_step_per_token(const char* file, int line, const std::string& call, std::size_t steps,
                           std::size_t tokens) {
  if (steps == tokens) return true;
  testing::report_failure(file, line, "step_logits_wrong", {{"position", std::to_string(steps)}, {"difference", "?"}},
                          fmt::format("{} gave {} for {}", call, testing::counted(steps, "result"),
                                      testing::counted(tokens, "token")));
  return false;
}

// The model's head, counting its forward calls: how many steps a generation runs through the
// model, measured against one forward_step's count (inside an observation only).
// It also counts the calls made while `model` (when set) is in training mode: the head is put in
// after the model was built, so the model's own flag is the one model.eval() sets.
struct CountingHead : nn::Linear {
  using nn::Linear::Linear;
  Tensor forward(const Tensor& x) override {
    ++runs;
    if (model != nullptr && model->training()) ++training_runs;
    return nn::Linear::forward(x);
  }
  std::int64_t runs = 0;
  std::int64_t training_runs = 0;
  const nn::GPT* model = nullptr;
};

// Sizes drawn by the run: H heads of d_h, N layers, a vocabulary and a context of awkward sizes.
GptSizes drawn_sizes(testing::Generator& draw) {
  const std::int64_t heads = 1 + draw.below(3), head_dim = 1 + draw.below(3);
  return {2 + draw.below(11), 1 + draw.below(9), heads * head_dim, heads, 1 + draw.below(2)};
}

}  // namespace

TEST(Memoization, StepLogits) {
  // The tokens of a sequence of max_length go through forward_step one by one; the logits of step
  // t must equal, within 1e-5, the full forward's logits at position t of the whole sequence (the
  // full forward is causal, so position t there sees exactly the tokens 0 .. t). One head first:
  // where it is right and more heads are not, the heads are what is wrong.
  testing::Generator draw(1801);
  std::uint64_t stream = 1802;
  bool one_head_right = false;
  for (const GptSizes& s : {GptSizes{11, 9, 6, 1, 2}, GptSizes{11, 9, 6, 2, 2}, GptSizes{5, 7, 4, 4, 1},
                            GptSizes{3, 1, 3, 1, 3}, drawn_sizes(draw)}) {
    const Parameters p = random_parameters(gpt_parameter_shapes(s), stream);
    stream += 100;
    const std::vector<std::int64_t> ids = random_ints(at(s.max_length), s.vocab, stream++);
    const Tensor tokens = tokens_of(ids);
    const auto cached = observe(fmt::format("forward_step on the tokens {} one by one, {}", ids_text(ids), sizes_text(s)),
                                [&] {
                                  nn::GPT model = gpt_with(s, p);
                                  nn::KVCache cache(model.config);
                                  Steps steps;
                                  for (const std::int64_t token : ids) steps.push_back(nn::forward_step(model, cache, token));
                                  return steps;
                                });
    const auto full = observe(fmt::format("GPT::forward of the tokens {}, {}", ids_text(ids), sizes_text(s)),
                              [&] { return gpt_with(s, p).forward(tokens); });
    // The same model with its position table zeroed: what a step without positions computes.
    Parameters no_positions = p;
    std::fill(no_positions["position_embedding"].begin(), no_positions["position_embedding"].end(), 0.0);
    const auto blind = observe(fmt::format("GPT::forward of the tokens {} with the position table zeroed, {}", ids_text(ids),
                                           sizes_text(s)),
                               [&] { return gpt_with(s, no_positions).forward(tokens); });
    // The same model with one of a block's pairs made one: what a step computes that reads one
    // tensor of a pair where the other belongs. Each block's w_value set to its w_key (the cached
    // keys read as the values), w_key to w_value, its second LayerNorm to its first (ln1 applied
    // before the MLP), and the first to the second; each with the failure that names it.
    struct Pair {
      std::string to, from;
      const char* failure;
      const char* model;
    };
    const std::vector<Pair> pairs = {
        {"attention.w_value", "attention.w_key", "keys_values_mixed", "whose values are its keys"},
        {"attention.w_key", "attention.w_value", "keys_values_mixed", "whose keys are its values"},
        {"ln2.gain", "ln1.gain", "layer_norms_mixed", "whose second LayerNorm is its first"},
        {"ln1.gain", "ln2.gain", "layer_norms_mixed", "whose first LayerNorm is its second"}};
    std::vector<Parameters> made_one(pairs.size(), p);
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      for (std::int64_t n = 0; n < s.layers; ++n) {
        const std::string block = fmt::format("blocks.{}.", n);
        const Pair& pair = pairs[k];
        made_one[k][block + pair.to] = p.at(block + pair.from);
        if (pair.to.ends_with(".gain"))  // a LayerNorm's bias goes with its gain
          made_one[k][block + pair.to.substr(0, 3) + ".bias"] = p.at(block + pair.from.substr(0, 3) + ".bias");
      }
    }
    const auto swapped = observe(
        fmt::format("GPT::forward of the tokens {} with each block's w_value set to its w_key, its w_key to its "
                    "w_value, its ln2 to its ln1, and its ln1 to its ln2, {}", ids_text(ids), sizes_text(s)),
        [&] {
          std::vector<Tensor> logits;
          for (const Parameters& changed : made_one) logits.push_back(gpt_with(s, changed).forward(tokens));
          return logits;
        });
    if (!KILN_EXPECT_OK(cached, "step_logits_wrong", {{"position", "0"}})) return;
    // The full forward is module 13's: its own checks judge it.
    if (!full.ok() || !blind.ok() || !swapped.ok()) {
      KILN_JUDGE report_forward_failed(__FILE__, __LINE__,
                                       !full.ok()    ? full.describe_error()
                                       : !blind.ok() ? blind.describe_error()
                                                     : swapped.describe_error());
      return;
    }
    KILN_JUDGE {
      const Steps& steps = *cached;
      if (!expect_step_per_token(__FILE__, __LINE__, cached.call(), steps.size(), ids.size())) return;
      bool like_blind = true;
      // Like a model whose pair is one tensor (a hostile program may return fewer models than
      // pairs: then like none).
      std::vector<bool> like_made_one(pairs.size(), swapped->size() == pairs.size());
      for (std::int64_t t = 0; t < s.max_length; ++t) {
        like_blind = like_blind && step_difference(steps[at(t)], *blind, t, s.vocab) <= 1e-4;
        for (std::size_t k = 0; k < pairs.size() && swapped->size() == pairs.size(); ++k)
          like_made_one[k] = like_made_one[k] && step_difference(steps[at(t)], (*swapped)[k], t, s.vocab) <= 1e-4;
      }
      const auto named = std::find(like_made_one.begin(), like_made_one.end(), true);
      for (std::int64_t t = 0; t < s.max_length; ++t) {
        const double difference = step_difference(steps[at(t)], *full, t, s.vocab);
        if (difference <= 1e-5) continue;
        const std::vector<float> expected(full->values.begin() + t * s.vocab, full->values.begin() + (t + 1) * s.vocab);
        const std::string detail = fmt::format("{}: step {} gave {}, the full forward's position {} is {}", cached.call(),
                                               t, testing::list(steps[at(t)]), t, testing::list(expected));
        const testing::Params params{{"position", std::to_string(t)}, {"difference", fmt::format("{:.3g}", difference)}};
        if (like_blind) {
          KILN_FAIL("position_missing", params, detail);
        } else if (named != like_made_one.end()) {
          const Pair& pair = pairs[static_cast<std::size_t>(named - like_made_one.begin())];
          testing::Params with_model = params;
          with_model.push_back({"model", pair.model});
          KILN_FAIL(pair.failure, with_model, detail);
        } else if (one_head_right && s.heads > 1) {
          KILN_FAIL("heads_mixed", {{"heads", std::to_string(s.heads)}, {"position", std::to_string(t)},
                                    {"difference", fmt::format("{:.3g}", difference)}}, detail);
        } else if (t == 0) {
          KILN_FAIL("step_logits_wrong", params, detail);
        } else {
          KILN_FAIL("cache_misused", params, detail);
        }
        return;
      }
      if (s.heads == 1) one_head_right = true;
    }
  }

  // A cache built for a longer sequence than the model's, max_length 12 for a model of 9 with two
  // heads: each head's rows are the cache's own 12, so head 1 starts at row 12 of the layer's
  // keys, not at row 9 (the model's max_length), where head 0's unused rows hold zeros.
  {
    const GptSizes s{11, 9, 6, 2, 2};
    const Parameters p = random_parameters(gpt_parameter_shapes(s), stream + 50);
    const std::vector<std::int64_t> ids = random_ints(at(s.max_length), s.vocab, stream + 51);
    const auto longer = observe(
        fmt::format("forward_step on the tokens {} one by one, on a KVCache built with max_length 12, {}", ids_text(ids),
                    sizes_text(s)),
        [&] {
          nn::GPT model = gpt_with(s, p);
          nn::GPTConfig roomier = model.config;
          roomier.max_length = 12;
          nn::KVCache cache(roomier);
          Steps steps;
          for (const std::int64_t token : ids) steps.push_back(nn::forward_step(model, cache, token));
          return steps;
        });
    const auto full = observe(fmt::format("GPT::forward of the tokens {}, {}", ids_text(ids), sizes_text(s)),
                              [&] { return gpt_with(s, p).forward(tokens_of(ids)); });
    const testing::Params lengths{{"cache_length", "12"}, {"model_length", "9"}};
    testing::Params threw = lengths;
    threw.push_back({"position", "0"});
    threw.push_back({"difference", "?"});
    if (!KILN_EXPECT_OK(longer, "cache_rows_from_model", threw)) return;
    if (!full.ok()) {
      KILN_JUDGE report_forward_failed(__FILE__, __LINE__, full.describe_error());
      return;
    }
    KILN_JUDGE {
      if (!expect_step_per_token(__FILE__, __LINE__, longer.call(), longer->size(), ids.size())) return;
      for (std::int64_t t = 0; t < s.max_length; ++t) {
        const double difference = step_difference((*longer)[at(t)], *full, t, s.vocab);
        if (difference <= 1e-5) continue;
        testing::Params params = lengths;
        params.push_back({"position", std::to_string(t)});
        params.push_back({"difference", fmt::format("{:.3g}", difference)});
        KILN_FAIL("cache_rows_from_model", params,
                  fmt::format("{}: step {} differs from the full forward's position {} by {:.3g}", longer.call(), t, t,
                              difference));
        return;
      }
    }
  }

  // Each LayerNorm with its own eps. Every model above, as GPT builds it, has eps = 1e-5 in every
  // LayerNorm; this one has its LayerNorms set to other eps (as nn::LayerNorm(D, eps) builds them),
  // all three kinds apart. The full forward runs each block's ln1 and ln2 and the model's
  // ln_final with their eps, and so must the step: layer_norm(x, gain, bias) leaves eps at 1e-5.
  const GptSizes s{11, 9, 6, 2, 2};
  const Parameters p = random_parameters(gpt_parameter_shapes(s), stream);
  const std::vector<std::int64_t> ids = random_ints(at(s.max_length), s.vocab, stream + 1);
  const std::string eps_text = "0.5 (ln1), 0.25 (ln2) and 0.125 (ln_final)";
  // The test's model with those eps (inside an observation only).
  const auto gpt_with_eps = [&] {
    nn::GPT model = gpt_with(s, p);
    for (const auto& block : model.blocks) {
      block->ln1->eps = 0.5;
      block->ln2->eps = 0.25;
    }
    model.ln_final->eps = 0.125;
    return model;
  };
  const std::string what = fmt::format("the tokens {}, {} with LayerNorm eps {}", ids_text(ids), sizes_text(s), eps_text);
  const auto cached = observe("forward_step on " + what + ", one by one", [&] {
    nn::GPT model = gpt_with_eps();
    nn::KVCache cache(model.config);
    Steps steps;
    for (const std::int64_t token : ids) steps.push_back(nn::forward_step(model, cache, token));
    return steps;
  });
  const auto full = observe("GPT::forward of " + what, [&] { return gpt_with_eps().forward(tokens_of(ids)); });
  if (!KILN_EXPECT_OK(cached, "step_logits_wrong", {{"position", "0"}})) return;
  if (!full.ok()) {
    KILN_JUDGE report_forward_failed(__FILE__, __LINE__, full.describe_error());
    return;
  }
  KILN_JUDGE {
    const Steps& steps = *cached;
    if (!expect_step_per_token(__FILE__, __LINE__, cached.call(), steps.size(), ids.size())) return;
    // Every case above passed (the judge stops at the first failure): what differs here is eps.
    for (std::int64_t t = 0; t < s.max_length; ++t) {
      const double difference = step_difference(steps[at(t)], *full, t, s.vocab);
      if (difference <= 1e-5) continue;
      const std::vector<float> expected(full->values.begin() + t * s.vocab, full->values.begin() + (t + 1) * s.vocab);
      KILN_FAIL("layer_norm_eps_ignored",
                {{"eps", eps_text}, {"position", std::to_string(t)}, {"difference", fmt::format("{:.3g}", difference)}},
                fmt::format("{}: step {} gave {}, the full forward's position {} is {}", cached.call(), t,
                            testing::list(steps[at(t)]), t, testing::list(expected)));
      return;
    }
  }

  // Inference leaves the model as it found it: forward_step turns requires_grad off for the step
  // (its NoGradGuard) and back as it was when the step returns, so a later training step records
  // a graph again. Every parameter requires grad but the model's second, frozen here beforehand
  // (as the guard itself switches it, through the shared bookkeeping); after two steps each must
  // be as before: the frozen one still off, every other one on.
  using Flags = std::vector<std::pair<std::string, bool>>;
  const auto flags = observe(
      fmt::format("requires_grad of every parameter of {} before and after forward_step of the tokens {} and {}, its "
                  "second parameter frozen beforehand",
                  sizes_text(s), ids[0], ids[1]),
      [&] {
        nn::GPT model = gpt_with(s, p);
        std::vector<std::pair<std::string, Tensor>> parameters = model.named_parameters();
        if (parameters.size() > 1 && parameters[1].second.autograd()) parameters[1].second.autograd()->requires_grad = false;
        const auto read = [&] {
          Flags now;
          for (const auto& [name, parameter] : model.named_parameters()) now.emplace_back(name, parameter.requires_grad());
          return now;
        };
        const Flags before = read();
        nn::KVCache cache(model.config);
        nn::forward_step(model, cache, ids[0]);
        nn::forward_step(model, cache, ids[1]);
        return std::pair<Flags, Flags>(before, read());
      });
  if (!KILN_EXPECT_OK(flags, "step_logits_wrong", {{"position", "0"}})) return;
  KILN_JUDGE {
    const auto& [before, after] = *flags;
    std::size_t changed = 0, first = before.size();
    for (std::size_t k = 0; k < before.size() && k < after.size(); ++k) {
      if (after[k].second == before[k].second) continue;
      ++changed;
      first = std::min(first, k);
    }
    if (changed > 0) {
      const auto text = [](bool on) { return std::string(on ? "true" : "false"); };
      KILN_FAIL("requires_grad_changed",
                {{"parameter", before[first].first}, {"after", text(after[first].second)},
                 {"before", text(before[first].second)}},
                fmt::format("{}: {} of {} changed, {} first", flags.call(), changed,
                            testing::counted(before.size(), "parameter"), before[first].first));
      return;
    }
  }

  // The two edges of [0, V) on an empty cache: the token −1 and the token V, one row past the end
  // of the (V, D) token table. Each must be refused, not run: that it is kiln::IndexError naming
  // the token is judged in past_max_length; here only that no logits come back.
  for (const std::int64_t token : {std::int64_t{-1}, s.vocab}) {
    const auto edge = step_on_empty_cache(s, p, token);
    KILN_JUDGE {
      if (edge.ok()) {
        KILN_FAIL("token_range_unchecked", {{"token", std::to_string(token)}, {"vocab", std::to_string(s.vocab)}},
                  fmt::format("{} returned {}, expected kiln::IndexError", edge.call(), testing::counted(edge->size(), "logit")));
        return;
      }
    }
    if (edge.ok()) return;
  }
}

TEST(Memoization, GenerateCached) {
  // generate_cached and module 13's generate, on one model with the same seed, must give the same
  // tokens: greedy, and sampled at temperature 0.8 with top-3, for three seeds drawn by the run,
  // from prompts of 1, 3 and max_length tokens.
  testing::Generator draw(1811);
  const GptSizes s{11, 9, 6, 2, 2};
  const Parameters p = random_parameters(gpt_parameter_shapes(s), 1812);
  struct Case {
    std::vector<std::int64_t> prompt;
    std::int64_t n_new;
    double temperature;
    std::int64_t top_k;
    std::uint64_t seed;
  };
  // Every call starts from a cache of its own: the same call twice on one model, each time with a
  // generator of the same seed, gives the same tokens. (A first call that fails is left to the
  // cases below, which name it.)
  const std::vector<std::int64_t> repeated_prompt = random_ints(2, s.vocab, 1819);
  const auto twice = observe(fmt::format("generate_cached(model, {}, 3, 0.8, 0, WichmannHill(5)) twice on one model, {}",
                                         ids_text(repeated_prompt), sizes_text(s)),
                             [&] {
                               nn::GPT model = gpt_with(s, p);
                               WichmannHill first_generator(5), second_generator(5);
                               const std::vector<std::int64_t> first =
                                   nn::generate_cached(model, repeated_prompt, 3, 0.8, 0, first_generator);
                               std::vector<std::int64_t> second;
                               std::string error;
                               try {
                                 second = nn::generate_cached(model, repeated_prompt, 3, 0.8, 0, second_generator);
                               } catch (const std::exception& e) {
                                 error = e.what();
                               }
                               return std::tuple<std::vector<std::int64_t>, std::vector<std::int64_t>, std::string>{
                                   first, second, error};
                             });
  KILN_JUDGE {
    if (twice.ok()) {
      const auto& [first, second, error] = *twice;
      if (first != second) {
        KILN_FAIL("state_kept_between_calls", {},
                  fmt::format("{}: the first call returned {}, the second {}", twice.call(), ids_text(first),
                              error.empty() ? ids_text(second) : "an error: " + error));
        return;
      }
    }
  }

  std::vector<Case> cases;
  std::uint64_t stream = 1813;
  for (int n = 0; n < 3; ++n) {
    const std::uint64_t seed = drawn_seed(draw);
    cases.push_back({random_ints(1, s.vocab, stream++), 8, 0.0, 0, seed});
    cases.push_back({random_ints(3, s.vocab, stream++), 6, 0.8, 3, seed});
  }
  cases.push_back({random_ints(2, s.vocab, stream++), 7, 1.0, 0, drawn_seed(draw)});
  cases.push_back({random_ints(9, s.vocab, stream++), 0, 0.8, 3, drawn_seed(draw)});
  for (const Case& c : cases) {
    const std::string arguments = fmt::format("(model, {}, {}, {}, {}, WichmannHill({})) with {}", ids_text(c.prompt),
                                              c.n_new, c.temperature, c.top_k, c.seed, sizes_text(s));
    const testing::Params params{{"prompt", tokens_text(c.prompt.size())},
                                 {"n_new", std::to_string(c.n_new)},
                                 {"temperature", fmt::format("{}", c.temperature)},
                                 {"top_k", std::to_string(c.top_k)}};
    // The tokens, then the generator's next draw after the call: both calls draw from the
    // caller's generator and leave it in the same place.
    const auto cached = observe("generate_cached" + arguments + ", then generator.next()", [&] {
      nn::GPT model = gpt_with(s, p);
      WichmannHill generator(c.seed);
      std::vector<std::int64_t> tokens = nn::generate_cached(model, c.prompt, c.n_new, c.temperature, c.top_k, generator);
      return std::tuple<std::vector<std::int64_t>, double>{std::move(tokens), generator.next()};
    });
    const auto full = observe("generate" + arguments + ", then generator.next()", [&] {
      nn::GPT model = gpt_with(s, p);
      WichmannHill generator(c.seed);
      std::vector<std::int64_t> tokens = nn::generate(model, c.prompt, c.n_new, c.temperature, c.top_k, generator);
      return std::tuple<std::vector<std::int64_t>, double>{std::move(tokens), generator.next()};
    });
    testing::Params with_step = params;
    with_step.emplace_back("step", "0");
    // Every case fits (prompt + n_new ≤ max_length, the prompt not empty, n_new ≥ 0): an argument
    // error that speaks of max_length, as the length error must, is a bound drawn one too tight.
    // (Any other error is reported below, as it is.)
    if (!cached.ok() && cached.error().is(testing::error_kind_name<std::invalid_argument>()) &&
        (cached.error().message.find("max_length") != std::string::npos ||
         cached.error().message.find(std::to_string(s.max_length)) != std::string::npos)) {
      KILN_FAIL("fitting_sequence_refused",
                {{"prompt", tokens_text(c.prompt.size())},
                 {"n_new", std::to_string(c.n_new)},
                 {"max_length", std::to_string(s.max_length)}},
                fmt::format("{} threw std::invalid_argument: {}", cached.call(), cached.error().message));
      return;
    }
    if (!KILN_EXPECT_OK(cached, "generate_differs", with_step)) return;
    if (!full.ok()) {
      KILN_FAIL("generate_differs", with_step, "module 13's generate failed, run grader check 13: " + full.describe_error());
      return;
    }
    KILN_JUDGE {
      const auto& [mine, next_mine] = *cached;
      const auto& [theirs, next_theirs] = *full;
      if (mine == theirs && next_mine != next_theirs) {
        KILN_FAIL("generator_not_advanced", params,
                  fmt::format("{} drew {}; after generate the next draw is {}", cached.call(), next_mine, next_theirs));
        return;
      }
      if (mine == theirs) continue;
      std::size_t first = 0;
      while (first < mine.size() && first < theirs.size() && mine[first] == theirs[first]) ++first;
      with_step.back().second = std::to_string(first >= c.prompt.size() ? first - c.prompt.size() : 0);
      KILN_FAIL("generate_differs", with_step,
                fmt::format("{} returned {}; generate returned {}", cached.call(), ids_text(mine), ids_text(theirs)));
      return;
    }
  }
  // The model goes into evaluation mode, and the steps run: every prompt token and every new one
  // but the last, once each. Counted by the head's forward calls, against one forward_step's.
  // With n_new = 0 the prompt still runs, all of it: nothing is drawn, but the call is no shortcut.
  // The model, in training mode as built, goes into evaluation mode before the first step: the
  // head counts its calls made in training mode too.
  for (const Case& c : cases) {
    const auto runs = observe(
        fmt::format("the head's forward calls in one forward_step, then in generate_cached(model, {}, {}, {}, {}, "
                    "WichmannHill({})) with {}, and model.training() after it",
                    ids_text(c.prompt), c.n_new, c.temperature, c.top_k, c.seed, sizes_text(s)),
        [&] {
          nn::GPT model = gpt_with(s, p);
          WichmannHill generator(c.seed);
          const auto head = std::make_shared<CountingHead>(s.width, s.vocab, generator);
          head->model = &model;
          model.head = head;
          nn::KVCache cache(model.config);
          nn::forward_step(model, cache, c.prompt.front());
          const std::int64_t per_step = head->runs;
          head->runs = 0;
          head->training_runs = 0;
          WichmannHill sampler(c.seed);
          nn::generate_cached(model, c.prompt, c.n_new, c.temperature, c.top_k, sampler);
          return std::make_tuple(per_step, head->runs, model.training(), head->training_runs);
        });
    if (!KILN_EXPECT_OK(runs, "generate_differs",
                        {{"prompt", tokens_text(c.prompt.size())},
                         {"n_new", std::to_string(c.n_new)},
                         {"temperature", fmt::format("{}", c.temperature)},
                         {"top_k", std::to_string(c.top_k)},
                         {"step", "0"}})) {
      return;
    }
    KILN_JUDGE {
      const auto& [per_step, generate_runs, training, training_runs] = *runs;
      if (c.n_new == 0 && per_step > 0 && generate_runs == 0) {
        KILN_FAIL("prompt_not_run",
                  {{"prompt", tokens_text(c.prompt.size())},
                   {"n_new", "0"},
                   {"seen", "it returned the prompt without running a single step"}},
                  fmt::format("{}: one forward_step calls the head {}, generate_cached never called it, and "
                              "model.training() is {}",
                              runs.call(), testing::counted(per_step, "time"), training));
        return;
      }
      if (training) {
        KILN_FAIL("left_in_training_mode", {{"prompt", tokens_text(c.prompt.size())}, {"n_new", std::to_string(c.n_new)}},
                  runs.call() + ": model.training() is still true");
        return;
      }
      if (training_runs > 0) {
        KILN_FAIL("prompt_run_in_training_mode",
                  {{"prompt", tokens_text(c.prompt.size())}, {"n_new", std::to_string(c.n_new)}},
                  fmt::format("{}: the head ran {} of its {} with model.training() true (one forward_step "
                              "calls it {})",
                              runs.call(), training_runs, testing::counted(generate_runs, "call"),
                              testing::counted(per_step, "time")));
        return;
      }
      // A step that never calls the head cannot be counted this way.
      if (per_step == 0) continue;
      // With no new token the whole prompt runs (its last logits are then not used).
      const std::int64_t steps = static_cast<std::int64_t>(c.prompt.size()) + std::max<std::int64_t>(c.n_new, 1) - 1;
      if (generate_runs != per_step * steps) {
        KILN_FAIL("steps_miscounted",
                  {{"prompt", tokens_text(c.prompt.size())},
                   {"n_new", std::to_string(c.n_new)},
                   {"runs", generate_runs % per_step == 0
                                ? testing::counted(generate_runs / per_step, "step")
                                : fmt::format("{:.3g} steps", static_cast<double>(generate_runs) / static_cast<double>(per_step))},
                   {"steps", std::to_string(steps)}},
                  fmt::format("{}: one forward_step calls the head {}, generate_cached called it {}", runs.call(),
                              testing::counted(per_step, "time"),
                              testing::counted(generate_runs, "time")));
        return;
      }
    }
  }
  // An empty prompt has no last token to sample from, and n_new < 0 no meaning: both refused.
  const std::vector<std::int64_t> one = random_ints(1, s.vocab, stream++);
  const std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>> refused = {{{}, 0}, {{}, 3}, {one, -1}};
  for (const auto& [prompt, n_new] : refused) {
    const auto out = observe_greedy(s, p, prompt, n_new);
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, out, "generate_arguments_not_checked", {},
                                                    {{"prompt", tokens_text(prompt.size())}, {"n_new", std::to_string(n_new)}});
    }
    if (out.ok() || !out.error().is(testing::error_kind_name<std::invalid_argument>())) return;
  }
  // A prompt token outside [0, V) is refused by forward_step with kiln::IndexError, which the call
  // passes on: also with n_new = 0, since the prompt runs all the same, and (the other side) with
  // new tokens asked for. The bad token last, after valid ones of the run, and first.
  const std::vector<std::int64_t> valid = random_ints(2, s.vocab, stream++);
  const std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>> bad_tokens = {
      {{s.vocab}, 0}, {{valid[0], valid[1], -1}, 0}, {{s.vocab, valid[0]}, 2}};
  for (const auto& [prompt, n_new] : bad_tokens) {
    const auto out = observe_greedy(s, p, prompt, n_new);
    KILN_JUDGE {
      testing::expect_throws<IndexError>(
          __FILE__, __LINE__, out, "prompt_not_run", {},
          {{"prompt", tokens_text(prompt.size())},
           {"n_new", std::to_string(n_new)},
           {"seen", fmt::format("the prompt {} holds a token outside [0, {}), which forward_step refuses with "
                                "kiln::IndexError, and the call did not pass that error on",
                                ids_text(prompt), s.vocab)}});
    }
    if (out.ok() || !out.error().is(testing::error_kind_name<IndexError>())) return;
  }
  // A fresh model put in training mode, then generate_cached(model, prompt, n_new, 0, 0, generator):
  // whether the call threw Error (another error is judged by the cases above), and
  // model.training() after it. Student code: call it only inside observe().
  const auto threw_and_training = [&]<class Error>(std::type_identity<Error>, const std::vector<std::int64_t>& prompt,
                                                   std::int64_t n_new) {
    nn::GPT model = gpt_with(s, p);
    model.train();
    WichmannHill generator(1);
    bool threw = false;
    try {
      nn::generate_cached(model, prompt, n_new, 0.0, 0, generator);
    } catch (const Error&) {
      threw = true;
    } catch (const std::exception&) {
    }
    return std::tuple<bool, bool>{threw, model.training()};
  };
  // Only the argument checks come before model.eval(): a prompt token outside [0, V) is refused
  // by forward_step with the model already in evaluation mode, so a model in training mode comes
  // out of that error in evaluation mode, with n_new = 0 and with n_new = 2.
  for (const std::int64_t n_new : {std::int64_t{0}, std::int64_t{2}}) {
    const std::vector<std::int64_t> prompt = {valid[0], s.vocab};
    const auto mode = observe(fmt::format("model.train(), then generate_cached(model, {}, {}, 0, 0, generator), whose "
                                          "token {} forward_step refuses, then model.training(), with {}",
                                          ids_text(prompt), n_new, s.vocab, sizes_text(s)),
                              [&] { return threw_and_training(std::type_identity<IndexError>{}, prompt, n_new); });
    const testing::Params params = {{"prompt", tokens_text(prompt.size())}, {"n_new", std::to_string(n_new)}};
    if (!KILN_EXPECT_OK(mode, "prompt_run_in_training_mode", params)) return;
    KILN_JUDGE {
      const auto [index_error, training] = *mode;
      if (index_error && training) {
        KILN_FAIL("prompt_run_in_training_mode", params,
                  mode.call() + ": the call passed forward_step's kiln::IndexError on, and model.training() is still "
                                "true: forward_step ran before model.eval()");
        return;
      }
    }
  }
  // The arguments are checked before anything else: a refused call leaves the model as it was,
  // in training mode here. Each refusal, and a sequence one token longer than max_length (judged
  // only when refused: past_max_length names a sequence let through).
  std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>> refusals = refused;
  refusals.push_back({random_ints(static_cast<std::size_t>(s.max_length), s.vocab, stream++), 1});
  for (const auto& [prompt, n_new] : refusals) {
    const auto mode = observe(fmt::format("model.train(), then generate_cached(model, {}, {}, 0, 0, generator), which "
                                          "refuses it, then model.training(), with {}",
                                          ids_text(prompt), n_new, sizes_text(s)),
                              [&] {
                                return threw_and_training(std::type_identity<std::invalid_argument>{}, prompt, n_new);
                              });
    if (!KILN_EXPECT_OK(mode, "refused_call_changed_mode")) return;
    KILN_JUDGE {
      const auto [was_refused, training] = *mode;
      if (was_refused && !training) {
        KILN_FAIL("refused_call_changed_mode", {}, mode.call() + ": model.training() is false");
        return;
      }
    }
  }
}

TEST(Memoization, CacheMemory) {
  // A KVCache holds N keys and N values tensors of (H, max_length, d_h), zeros, with length 0;
  // each forward_step adds one to its length; kv_cache_bytes is 2·N·T·D·4 and equals the bytes of
  // the cache's tensors at T = max_length.
  testing::Generator draw(1821);
  std::uint64_t stream = 1822;
  for (const GptSizes& s : {GptSizes{11, 9, 6, 2, 2}, GptSizes{3, 7, 3, 3, 3}, drawn_sizes(draw)}) {
    const nn::GPTConfig config = config_of(s);
    const auto layout = observe(fmt::format("KVCache(config) for {}", sizes_text(s)), [&] {
      nn::KVCache cache(config);
      bool zeros = true;
      std::vector<Shape> shapes;
      for (const auto* tensors : {&cache.keys, &cache.values}) {
        for (const Tensor& t : *tensors) {
          shapes.push_back(t.shape());
          for (const float value : t.to_vector()) zeros = zeros && value == 0.0f;
        }
      }
      // No two elements share storage: every element of every tensor (keys first, then values,
      // each in row-major order) gets its own number, 1, 2, 3, ..., written through the tensor's
      // strides and offset, then every tensor is read back.
      std::vector<Tensor*> all;
      for (Tensor& t : cache.keys) all.push_back(&t);
      for (Tensor& t : cache.values) all.push_back(&t);
      float number = 0.0f;
      for (Tensor* t : all) {
        const Shape& shape = t->shape();
        for (std::int64_t n = 0; n < t->numel(); ++n) {
          std::int64_t at = t->offset(), rest = n;
          for (std::size_t d = shape.size(); d-- > 0;) {
            at += rest % shape[d] * t->strides()[d];
            rest /= shape[d];
          }
          t->storage_data()[at] = ++number;
        }
      }
      std::vector<std::vector<float>> filled;
      for (const Tensor* t : all) filled.push_back(t->to_vector());
      return std::make_tuple(shapes, static_cast<std::int64_t>(cache.keys.size()), cache.length, zeros, filled);
    });
    std::int64_t held = 0;  // the bytes of the cache's tensors (judge only)
    KILN_JUDGE {
      const Shape expected_shape{s.heads, s.max_length, s.width / s.heads};
      const std::int64_t expected_bytes = 2 * s.layers * s.max_length * s.width * 4;
      const testing::Params params{{"config", sizes_text(s)},
                                   {"keys", testing::counted(s.layers, "tensor of keys", "tensors of keys")},
                                   {"values", testing::counted(s.layers, "tensor of values", "tensors of values")},
                                   {"shape", to_string(expected_shape)},
                                   {"bytes", std::to_string(expected_bytes)}};
      if (!KILN_EXPECT_OK(layout, "cache_layout_wrong", params)) return;
      const auto& [shapes, key_count, length, zeros, filled] = *layout;
      bool shapes_right = key_count == s.layers && static_cast<std::int64_t>(shapes.size()) == 2 * s.layers;
      for (const Shape& shape : shapes) {
        held += 4 * numel(shape);
        shapes_right = shapes_right && shape == expected_shape;
      }
      if (!shapes_right || length != 0 || !zeros) {
        std::string seen;
        for (const Shape& shape : shapes) seen += (seen.empty() ? "" : ", ") + to_string(shape);
        KILN_FAIL("cache_layout_wrong", params,
                  fmt::format("{} holds {} and {} in all: [{}] ({} bytes), length {}{}", layout.call(),
                              testing::counted(key_count, "tensor of keys", "tensors of keys"), shapes.size(), seen,
                              held, length, zeros ? "" : ", not all zeros"));
        return;
      }
      // Element n of tensor i was given its own number, before the elements after it: one
      // holding a later element's number shares that element's storage.
      const auto name = [&](std::size_t i) {
        const auto layer = static_cast<std::int64_t>(i) % s.layers;
        return fmt::format("{}[{}]", static_cast<std::int64_t>(i) < s.layers ? "keys" : "values", layer);
      };
      const auto owner = [&](std::int64_t number) {  // the tensor whose element got `number`
        for (std::size_t i = 0; i < filled.size(); ++i) {
          if (number <= static_cast<std::int64_t>(filled[i].size())) return name(i);
          number -= static_cast<std::int64_t>(filled[i].size());
        }
        return std::string("none of them");
      };
      std::int64_t own = 0;
      for (std::size_t i = 0; i < filled.size(); ++i) {
        for (std::size_t n = 0; n < filled[i].size(); ++n) {
          ++own;
          const float got = filled[i][n];
          if (got == static_cast<float>(own)) continue;
          const std::string other = got >= 1 ? owner(static_cast<std::int64_t>(got)) : "none of them";
          KILN_FAIL("cache_tensors_shared", {{"tensor", name(i)}, {"other", other == name(i) ? "itself" : other}},
                    fmt::format("{}: after every element of its {} tensors was given its own number, element {} of "
                                "{} holds {}, the number of an element of {}, where it should hold {}",
                                layout.call(), filled.size(), n, name(i), got, other, own));
          return;
        }
      }
    }
    if (!layout.ok()) return;
    // The bytes formula against the tensors (T = max_length), and at other lengths.
    const std::int64_t drawn_length = draw.below(s.max_length + 1);
    for (const std::int64_t t : {s.max_length, std::int64_t{0}, std::int64_t{1}, drawn_length}) {
      const auto bytes = observe(fmt::format("kv_cache_bytes(config, {}) for {}", t, sizes_text(s)),
                                 [&] { return nn::kv_cache_bytes(config, t); });
      KILN_JUDGE {
        const std::int64_t expected = 2 * s.layers * t * s.width * 4;
        const testing::Params b{{"call", bytes.call()}, {"expected", std::to_string(expected)}};
        if (!KILN_EXPECT_OK(bytes, "bytes_wrong", b)) return;
        if (*bytes != expected) {
          KILN_FAIL("bytes_wrong", b,
                    fmt::format("{} is {}{}", bytes.call(), *bytes,
                                t == s.max_length ? fmt::format("; the cache's tensors hold {} bytes", held) : ""));
          return;
        }
      }
      if (!bytes.ok()) return;
    }
    // The length after each of max_length steps on tokens drawn by the run.
    const std::vector<std::int64_t> ids = random_ints(at(s.max_length), s.vocab, stream++);
    const Parameters p = random_parameters(gpt_parameter_shapes(s), stream);
    stream += 100;
    // The lengths up to a step that threw, and its error: a cache that counts too fast runs past
    // max_length before the last token, and its lengths so far say why.
    const auto lengths = observe(fmt::format("cache.length after each forward_step on {}, {}", ids_text(ids), sizes_text(s)),
                                 [&] {
                                   nn::GPT model = gpt_with(s, p);
                                   nn::KVCache cache(model.config);
                                   std::vector<std::int64_t> out;
                                   std::string error;
                                   try {
                                     for (const std::int64_t token : ids) {
                                       nn::forward_step(model, cache, token);
                                       out.push_back(cache.length);
                                     }
                                   } catch (const NotImplemented&) {
                                     throw;  // a stub is "not written yet", at any step
                                   } catch (const std::exception& e) {
                                     if (out.empty()) throw;  // the first step: the observation's own error
                                     error = e.what();
                                   }
                                   return std::pair(out, error);
                                 });
    if (!KILN_EXPECT_OK(lengths, "length_not_counted", {{"calls", testing::counted(1, "forward_step call")}, {"length", "unknown (the step threw)"}})) return;
    KILN_JUDGE {
      const auto& [got_lengths, error] = *lengths;
      const std::string seen = lengths.call() + " gave " +
                               testing::list(std::vector<float>(got_lengths.begin(), got_lengths.end())) +
                               (error.empty() ? "" : ", then step " + std::to_string(got_lengths.size() + 1) +
                                                         " threw: " + error);
      for (std::size_t n = 0; n < ids.size(); ++n) {
        const bool reached = n < got_lengths.size();
        if (reached && got_lengths[n] == static_cast<std::int64_t>(n) + 1) continue;
        KILN_FAIL("length_not_counted",
                  {{"calls", testing::counted(n + 1, "forward_step call")},
                   {"length", reached ? std::to_string(got_lengths[n]) : "unknown (the step threw)"}},
                  seen);
        return;
      }
    }
  }
  // Real sizes, by the formula alone: GPT-2 small at 1024 positions, GPT-3 at 2048.
  const std::pair<nn::GPTConfig, std::int64_t> real[] = {{nn::GPTConfig{50257, 1024, 768, 12, 12}, 1024},
                                                          {nn::GPTConfig{50257, 2048, 12288, 96, 96}, 2048}};
  for (std::size_t n = 0; n < std::size(real); ++n) {
    const auto& [config, length] = real[n];
    const auto bytes = observe(fmt::format("kv_cache_bytes(config, {}) for N = {}, D = {}", length, config.layers, config.model_dim),
                               [&] { return nn::kv_cache_bytes(config, length); });
    KILN_JUDGE {
      const std::int64_t expected = n == 0 ? std::int64_t{75'497'472} : std::int64_t{19'327'352'832};
      const testing::Params b{{"call", bytes.call()}, {"expected", std::to_string(expected)}};
      if (!KILN_EXPECT_OK(bytes, "bytes_wrong", b)) return;
      KILN_EXPECT(*bytes == expected, "bytes_wrong", b, fmt::format("{} is {}", bytes.call(), *bytes));
    }
    if (!bytes.ok()) return;
  }
}

TEST(Memoization, PastMaxLength) {
  // A step past max_length has no row in the position table nor in the cache: forward_step on a
  // full cache raises kiln::IndexError naming max_length, and generate_cached refuses, with
  // std::invalid_argument before it runs anything, a prompt and n_new that do not fit.
  const GptSizes s{7, 3, 4, 2, 1};
  const Parameters p = random_parameters(gpt_parameter_shapes(s), 1831);
  const std::vector<std::int64_t> ids = random_ints(4, s.vocab, 1832);
  const auto step = observe(fmt::format("forward_step of a 4th token {} after 3, {}", ids_text(ids), sizes_text(s)), [&] {
    nn::GPT model = gpt_with(s, p);
    nn::KVCache cache(model.config);
    std::vector<float> logits;
    for (const std::int64_t token : ids) logits = nn::forward_step(model, cache, token);
    return logits;
  });
  KILN_JUDGE { testing::expect_throws<IndexError>(__FILE__, __LINE__, step, "full_cache_not_rejected", {"3"}); }
  // A token outside [0, V) has no row in the token table: refused, as the table's lookup would.
  std::string token_v_error;  // what forward_step says of token V on an empty cache
  for (const std::int64_t token : {std::int64_t{-1}, s.vocab}) {
    const auto bad = step_on_empty_cache(s, p, token);
    KILN_JUDGE {
      testing::expect_throws<IndexError>(__FILE__, __LINE__, bad, "token_not_rejected", {std::to_string(token)},
                                         {{"token", std::to_string(token)}, {"vocab", std::to_string(s.vocab)}});
      if (token == s.vocab && !bad.ok()) token_v_error = bad.error().message;
    }
  }
  // The full cache is checked first: on it, the token V gets the full cache's error too, not the
  // one it gets on an empty cache.
  const auto full_and_bad = observe(
      fmt::format("forward_step of a 4th token, {} (= V), after {}, {}", s.vocab,
                  ids_text({ids.begin(), ids.begin() + 3}), sizes_text(s)),
      [&] {
        nn::GPT model = gpt_with(s, p);
        nn::KVCache cache(model.config);
        for (std::size_t t = 0; t < 3; ++t) nn::forward_step(model, cache, ids[t]);
        return nn::forward_step(model, cache, s.vocab);
      });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, full_and_bad, "full_cache_not_rejected", {"3"});
    if (::testing::Test::HasFailure()) return;
    if (full_and_bad.error().message == token_v_error) {
      KILN_FAIL("full_cache_not_rejected", {},
                full_and_bad.call() + " gave the error of token " + std::to_string(s.vocab) + " on an empty cache, \"" +
                    token_v_error + "\": the token was checked before the full cache");
      return;
    }
  }
  // A cache built for a shorter sequence than the model's, max_length 2: it is full after 2 steps,
  // whatever the model's max_length, and a 3rd step must be refused naming 2.
  const auto short_cache = observe(
      fmt::format("forward_step of a 3rd token, {}, on a KVCache built with max_length 2, after {}, {}", ids[2],
                  ids_text({ids.begin(), ids.begin() + 2}), sizes_text(s)),
      [&] {
        nn::GPT model = gpt_with(s, p);
        nn::GPTConfig shorter = model.config;
        shorter.max_length = 2;
        nn::KVCache cache(shorter);
        for (std::size_t t = 0; t < 2; ++t) nn::forward_step(model, cache, ids[t]);
        return nn::forward_step(model, cache, ids[2]);
      });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, short_cache, "full_cache_not_rejected", {"2"});
    if (::testing::Test::HasFailure()) return;
  }
  // A refused step changes nothing: the cache keeps its length, after a token outside [0, V) on a
  // cache of 1 position, and after a 4th token on the full cache of 3.
  for (const std::size_t run : {std::size_t(1), std::size_t(3)}) {
    const std::int64_t refused = run == 1 ? s.vocab : ids[3];
    const auto length = observe(fmt::format("forward_step of {}, then of token {} (refused), then cache.length, {}",
                                            ids_text({ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(run)}),
                                            refused, sizes_text(s)),
                                [&] {
                                  nn::GPT model = gpt_with(s, p);
                                  nn::KVCache cache(model.config);
                                  for (std::size_t t = 0; t < run; ++t) nn::forward_step(model, cache, ids[t]);
                                  try {
                                    nn::forward_step(model, cache, refused);
                                  } catch (const IndexError&) {
                                  }
                                  return cache.length;
                                });
    KILN_JUDGE {
      const testing::Params params{{"expected", std::to_string(run)}};
      if (!KILN_EXPECT_OK(length, "refused_step_changed_cache", params)) return;
      if (*length != static_cast<std::int64_t>(run)) {
        KILN_FAIL("refused_step_changed_cache", params, fmt::format("{} is {}", length.call(), *length));
        return;
      }
    }
    if (!length.ok()) return;
  }
  // A prompt that is itself longer than max_length (3), with no new token and with some: the room
  // left, max_length - prompt.size(), is negative, which an unsigned size_t wraps to a huge number.
  for (const auto& [prompt_length, n_new] :
       {std::pair<std::size_t, std::int64_t>{2, 2}, {3, 1}, {1, 3}, {5, 0}, {4, 2}}) {
    const std::vector<std::int64_t> prompt = random_ints(prompt_length, s.vocab, 1833 + prompt_length);
    const auto out = observe_greedy(s, p, prompt, n_new);
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, out, "generate_length_not_checked", {"3"},
                                                    {{"prompt", tokens_text(prompt_length)}, {"n_new", std::to_string(n_new)}});
    }
  }
  if (::testing::Test::HasFailure()) return;
  // The token 2³² = 4,294,967,296 on an empty cache: far outside [0, V), and 0, a token of the
  // table, once held in an int.
  const std::int64_t past_int = std::int64_t{1} << 32;
  const auto wide_token = observe(fmt::format("forward_step of token {} on an empty cache, {}", past_int, sizes_text(s)), [&] {
    nn::GPT model = gpt_with(s, p);
    nn::KVCache cache(model.config);
    return nn::forward_step(model, cache, past_int);
  });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, wide_token, "token_narrowed", {std::to_string(past_int)},
                                       {{"vocab", std::to_string(s.vocab)}});
  }
  if (wide_token.ok()) return;
  // n_new = 2³² after a prompt of 1 token: far longer than max_length 3, and 0 new tokens once
  // held in an int.
  const std::vector<std::int64_t> one = random_ints(1, s.vocab, 1839);
  const auto wide_n_new = observe_greedy(s, p, one, past_int);
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, wide_n_new, "n_new_narrowed", {"3"});
  }
  if (wide_n_new.ok()) return;
  // n_new = 2⁶³ − 1 = 9,223,372,036,854,775,807, the largest int64_t, after a prompt of 1 token:
  // prompt.size() + n_new overflows an int64_t (to −2⁶³ where it wraps, below max_length), so the
  // check must compare n_new with the room the prompt leaves, max_length − prompt.size().
  const std::int64_t largest = std::numeric_limits<std::int64_t>::max();
  const auto largest_n_new = observe_greedy(s, p, one, largest);
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, largest_n_new, "length_sum_overflowed", {"3"},
                                                  {{"n_new", std::to_string(largest)}});
  }
}

}  // namespace kiln
