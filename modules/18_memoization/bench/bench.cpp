// Given: what `grader bench 18` times. One group, "generate 256 tokens": a GPT (V = 96, D = 64,
// H = 4, N = 2, max_length = 264; with --full D = 128, N = 4) continues an 8-token prompt by 256
// tokens, sampled at temperature 1 from one seed:
//
//   generate          module 13's generate(): the whole context through the model at every step
//                     (the naive baseline)
//   generate_cached   your generate_cached(): the prompt once, then one token per step
//
// Before either is timed, its tokens are compared with those of module 13's generate, computed
// once: a fast generator that writes other tokens is reported, not timed. A function you have not
// written yet throws kiln::NotImplemented, which the bench reports as not written.
//
// The counts given for each kernel:
//   flops        2 per multiply-add of the matrix products and of attention, summed over the steps:
//                a step over a context of T tokens costs T·(24·N·D² + 2·D·V) for the
//                projections, the MLPs and the head, plus 4·N·T²·D for attention with
//                recomputation; 24·N·D² + 2·D·V + 4·N·T·D for one cached token
//   bytes        the model's parameters, read once per step (4 bytes each)
//   extra_bytes  the cache, 2·N·max_length·D·4 bytes, for generate_cached; 0 for generate
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/bench.h"
#include "kiln/kv_cache.h"
#include "kiln/transformer.h"

namespace {

using kiln::bench::Role;

constexpr std::int64_t prompt_length = 8;
constexpr std::int64_t new_tokens = 256;
constexpr std::uint64_t sampling_seed = 18;

double parameter_count(const kiln::nn::GPTConfig& c) {
  const double d = static_cast<double>(c.model_dim);
  const double per_block = 4 * d * d + 8 * d * d + 4 * d + d + 4 * d;  // attention, MLP weights and biases, 2 LN
  return static_cast<double>(c.vocab_size + c.max_length) * d + static_cast<double>(c.layers) * per_block + 2 * d +
         d * static_cast<double>(c.vocab_size) + static_cast<double>(c.vocab_size);
}

// The flops (2 per multiply-add) of generating `new_tokens`, with or without the cache.
double generation_flops(const kiln::nn::GPTConfig& c, bool cached) {
  const double n = static_cast<double>(c.layers), d = static_cast<double>(c.model_dim), v = static_cast<double>(c.vocab_size);
  const double per_token = 24 * n * d * d + 2 * d * v;
  double flops = 0;
  if (cached) {
    // Every position once: the prompt and all new tokens but the last.
    for (std::int64_t t = 1; t < prompt_length + new_tokens; ++t) flops += per_token + 4 * n * static_cast<double>(t) * d;
  } else {
    for (std::int64_t t = prompt_length; t < prompt_length + new_tokens; ++t) {
      const double length = static_cast<double>(t);
      flops += length * per_token + 4 * n * length * length * d;
    }
  }
  return flops;
}

std::string check_tokens(const kiln::Indices& actual, const kiln::Indices& expected) {
  if (actual.size() != expected.size()) {
    return std::to_string(actual.size()) + " tokens, expected " + std::to_string(expected.size());
  }
  for (std::size_t n = 0; n < actual.size(); ++n) {
    if (actual[n] != expected[n]) {
      return "token " + std::to_string(n) + " is " + std::to_string(actual[n]) + ", module 13's generate gives " +
             std::to_string(expected[n]);
    }
  }
  return "";
}

}  // namespace

void register_benchmarks(const kiln::bench::Options& options) {
  kiln::nn::GPTConfig config{96, prompt_length + new_tokens, 64, 4, 2};
  if (options.full) config.model_dim = 128, config.layers = 4;
  auto model = std::make_shared<kiln::nn::GPT>(config, std::uint64_t{1});
  kiln::Indices prompt;
  for (std::int64_t t = 0; t < prompt_length; ++t) prompt.push_back((7 * t + 3) % config.vocab_size);
  // The tokens both must produce: module 13's generate, computed on first use and then kept.
  auto expected = std::make_shared<kiln::Indices>();
  const auto reference = [model, prompt, expected]() -> const kiln::Indices& {
    if (expected->empty()) {
      kiln::WichmannHill generator(sampling_seed);
      *expected = kiln::nn::generate(*model, prompt, new_tokens, 1.0, 0, generator);
    }
    return *expected;
  };
  const std::string group = "generate " + std::to_string(new_tokens) + " tokens";
  const double bytes = 4 * parameter_count(config) * static_cast<double>(new_tokens);
  for (const bool cached : {false, true}) {
    auto result = std::make_shared<kiln::Indices>();
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = cached ? "generate_cached" : "generate";
    kernel.role = cached ? Role::kernel : Role::naive;
    kernel.flops = generation_flops(config, cached);
    kernel.bytes = bytes;
    kernel.extra_bytes = cached ? static_cast<double>(2 * config.layers * config.max_length * config.model_dim * 4) : 0.0;
    kernel.run = [model, prompt, result, cached] {
      kiln::WichmannHill generator(sampling_seed);
      *result = cached ? kiln::nn::generate_cached(*model, prompt, new_tokens, 1.0, 0, generator)
                       : kiln::nn::generate(*model, prompt, new_tokens, 1.0, 0, generator);
    };
    kernel.validate = [result, reference] { return check_tokens(*result, reference()); };
    kiln::bench::add(std::move(kernel));
  }
}
