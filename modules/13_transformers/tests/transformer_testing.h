// Trusted code shared by module 13's checks: a GPT written again as plain loops in double (LayerNorm,
// causal multi-head attention, the MLP with exact GELU, the block, the model, the loss), the
// Wichmann-Hill generator and the sampling rule written out again, and random parameters. None of
// it calls the module's code, except load_parameters, which the checks only use inside
// observations.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/trusted.h"
#include "kiln/transformer.h"

namespace kiln::transformer_testing {

using testing::TrustedWichmannHill;

using testing::TensorData;
using Values = std::vector<double>;
using Parameters = std::map<std::string, Values>;

inline Values doubles(const TensorData& t) { return Values(t.values.begin(), t.values.end()); }
inline Values doubles(const Tensor& t) { return doubles(testing::data_of(t)); }
inline TensorData floats(const Shape& shape, const Values& values) {
  return testing::data_of(shape, std::vector<float>(values.begin(), values.end()));
}
inline std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// ---------------------------------------------------------------------------------------------
// LayerNorm

// How a LayerNorm may be computed: right, or one of the usual mistakes (float_x_hat: y formed
// from x̂ rounded to float, as the x̂ kept for backward is, instead of from the double x̂).
enum class NormVariant { right, unbiased, eps_outside, float_x_hat };

// rows of x (rows, width), each normalised: (x - μ)/√(σ² + eps)·gain + bias.
inline Values trusted_layer_norm(const Values& x, std::int64_t width, const Values& gain, const Values& bias,
                                 NormVariant variant = NormVariant::right, double eps = 1e-5) {
  const std::int64_t rows = static_cast<std::int64_t>(x.size()) / width;
  Values y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, variance = 0;
    for (std::int64_t j = 0; j < width; ++j) mean += x[at(r * width + j)];
    mean /= static_cast<double>(width);
    for (std::int64_t j = 0; j < width; ++j) variance += std::pow(x[at(r * width + j)] - mean, 2);
    variance /= static_cast<double>(variant == NormVariant::unbiased ? width - 1 : width);
    const double denominator =
        variant == NormVariant::eps_outside ? std::sqrt(variance) + eps : std::sqrt(variance + eps);
    for (std::int64_t j = 0; j < width; ++j) {
      double x_hat = (x[at(r * width + j)] - mean) / denominator;
      if (variant == NormVariant::float_x_hat) x_hat = static_cast<float>(x_hat);
      y[at(r * width + j)] = x_hat * gain[at(j)] + bias[at(j)];
    }
  }
  return y;
}

// ---------------------------------------------------------------------------------------------
// The pieces of a block

inline double trusted_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
// d/dx x·Φ(x) = Φ(x) + x·φ(x).
inline double trusted_gelu_derivative(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * pi);
}

// x (rows, in)·w (in, out) + b (out; none when b is empty).
inline Values trusted_linear(const Values& x, std::int64_t in, const Values& w, std::int64_t out, const Values& b) {
  const std::int64_t rows = static_cast<std::int64_t>(x.size()) / in;
  Values y(at(rows * out), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      double total = b.empty() ? 0.0 : b[at(o)];
      for (std::int64_t i = 0; i < in; ++i) total += x[at(r * in + i)] * w[at(i * out + o)];
      y[at(r * out + o)] = total;
    }
  }
  return y;
}

// Causal multi-head self-attention of x (batch, length, width) with H heads of width/H.
inline Values trusted_attention(const Values& x, std::int64_t batch, std::int64_t length, std::int64_t width,
                                std::int64_t heads, const Values& w_query, const Values& w_key, const Values& w_value,
                                const Values& w_out, bool causal = true) {
  const Values q = trusted_linear(x, width, w_query, width, {});
  const Values k = trusted_linear(x, width, w_key, width, {});
  const Values v = trusted_linear(x, width, w_value, width, {});
  const std::int64_t head_dim = width / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  Values merged(x.size(), 0.0);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      for (std::int64_t i = 0; i < length; ++i) {
        const std::int64_t seen = causal ? i + 1 : length;
        Values weights(at(seen));
        double largest = -INFINITY;
        for (std::int64_t j = 0; j < seen; ++j) {
          double dot = 0;
          for (std::int64_t e = 0; e < head_dim; ++e) {
            dot += q[at((b * length + i) * width + h * head_dim + e)] * k[at((b * length + j) * width + h * head_dim + e)];
          }
          weights[at(j)] = dot * scale;
          largest = std::max(largest, weights[at(j)]);
        }
        double total = 0;
        for (double& w : weights) total += (w = std::exp(w - largest));
        for (std::int64_t j = 0; j < seen; ++j) {
          for (std::int64_t e = 0; e < head_dim; ++e) {
            merged[at((b * length + i) * width + h * head_dim + e)] +=
                weights[at(j)] / total * v[at((b * length + j) * width + h * head_dim + e)];
          }
        }
      }
    }
  }
  return trusted_linear(merged, width, w_out, width, {});
}

// The MLP: Linear(D, 4D) -> GELU -> Linear(4D, D) on every row of x (rows, D).
inline Values trusted_mlp(const Values& x, std::int64_t width, const Values& fc_w, const Values& fc_b,
                          const Values& proj_w, const Values& proj_b) {
  Values hidden = trusted_linear(x, width, fc_w, 4 * width, fc_b);
  for (double& h : hidden) h = trusted_gelu(h);
  return trusted_linear(hidden, 4 * width, proj_w, width, proj_b);
}

inline Values plus(const Values& a, const Values& b) {
  Values c(a.size());
  for (std::size_t n = 0; n < a.size(); ++n) c[n] = a[n] + b[n];
  return c;
}

// How a block may be computed: right (pre-norm), or one of the usual mistakes.
enum class BlockVariant { right, post_norm, no_attention_residual };

// One block on x (batch, length, width); p holds the block's parameters under `prefix` ("" or
// "blocks.0.").
inline Values trusted_block(const Values& x, std::int64_t batch, std::int64_t length, std::int64_t width,
                            std::int64_t heads, const Parameters& p, const std::string& prefix,
                            BlockVariant variant = BlockVariant::right) {
  const auto& w = [&](const std::string& name) -> const Values& { return p.at(prefix + name); };
  const auto norm = [&](const Values& v, const std::string& which) {
    return trusted_layer_norm(v, width, w(which + ".gain"), w(which + ".bias"));
  };
  const auto attend = [&](const Values& v) {
    return trusted_attention(v, batch, length, width, heads, w("attention.w_query"), w("attention.w_key"),
                             w("attention.w_value"), w("attention.w_out"));
  };
  const auto mlp = [&](const Values& v) {
    return trusted_mlp(v, width, w("mlp.fc.weight"), w("mlp.fc.bias"), w("mlp.proj.weight"), w("mlp.proj.bias"));
  };
  switch (variant) {
    case BlockVariant::post_norm: {
      const Values h = norm(plus(x, attend(x)), "ln1");
      return norm(plus(h, mlp(h)), "ln2");
    }
    case BlockVariant::no_attention_residual: {
      const Values h = attend(norm(x, "ln1"));
      return plus(h, mlp(norm(h, "ln2")));
    }
    case BlockVariant::right:
      break;
  }
  const Values h = plus(x, attend(norm(x, "ln1")));
  return plus(h, mlp(norm(h, "ln2")));
}

// ---------------------------------------------------------------------------------------------
// The GPT

struct GptSizes {
  std::int64_t vocab, max_length, width, heads, layers;
};

inline nn::GPTConfig config_of(const GptSizes& s) { return {s.vocab, s.max_length, s.width, s.heads, s.layers}; }

// The parameters of a block, with their shapes, in named_parameters() order.
inline std::vector<std::pair<std::string, Shape>> block_parameter_shapes(std::int64_t width) {
  return {{"ln1.gain", {width}},
          {"ln1.bias", {width}},
          {"attention.w_query", {width, width}},
          {"attention.w_key", {width, width}},
          {"attention.w_value", {width, width}},
          {"attention.w_out", {width, width}},
          {"ln2.gain", {width}},
          {"ln2.bias", {width}},
          {"mlp.fc.weight", {width, 4 * width}},
          {"mlp.fc.bias", {4 * width}},
          {"mlp.proj.weight", {4 * width, width}},
          {"mlp.proj.bias", {width}}};
}

// The GPT's parameters, with their shapes, in named_parameters() order.
inline std::vector<std::pair<std::string, Shape>> gpt_parameter_shapes(const GptSizes& s) {
  std::vector<std::pair<std::string, Shape>> all{{"token_embedding", {s.vocab, s.width}},
                                                 {"position_embedding", {s.max_length, s.width}}};
  for (std::int64_t n = 0; n < s.layers; ++n) {
    for (const auto& [name, shape] : block_parameter_shapes(s.width)) all.emplace_back(fmt::format("blocks.{}.{}", n, name), shape);
  }
  all.insert(all.end(), {{"ln_final.gain", {s.width}}, {"ln_final.bias", {s.width}}, {"head.weight", {s.width, s.vocab}},
                         {"head.bias", {s.vocab}}});
  return all;
}

// Random values for parameters: gains in [0.5, 1.5], biases in [-0.5, 0.5], embeddings in
// [-1, 1], weight matrices in ±1.5/√(rows), so that every path carries a signal of order one.
inline Parameters random_parameters(const std::vector<std::pair<std::string, Shape>>& shapes, std::uint64_t stream) {
  Parameters p;
  for (const auto& [name, shape] : shapes) {
    const auto ends_with = [&](const std::string& end) {
      return name.size() >= end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
    };
    float low = -1.0f, high = 1.0f;
    if (ends_with("gain")) {
      low = 0.5f, high = 1.5f;
    } else if (ends_with("bias")) {
      low = -0.5f, high = 0.5f;
    } else if (!ends_with("embedding")) {
      high = static_cast<float>(1.5 / std::sqrt(static_cast<double>(shape[0])));
      low = -high;
    }
    p[name] = doubles(testing::random_tensor(shape, stream++, low, high));
  }
  return p;
}

// How a GPT may be computed: right, or without its final LayerNorm.
enum class GptVariant { right, no_final_norm };

// The logits (batch, length, vocab) of the token ids (batch·length, row-major).
inline Values trusted_gpt(const std::vector<std::int64_t>& ids, std::int64_t batch, const GptSizes& s,
                          const Parameters& p, GptVariant variant = GptVariant::right) {
  const std::int64_t length = static_cast<std::int64_t>(ids.size()) / batch;
  const Values& tokens = p.at("token_embedding");
  const Values& positions = p.at("position_embedding");
  Values x(at(batch * length * s.width));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < length; ++t) {
      for (std::int64_t d = 0; d < s.width; ++d) {
        x[at((b * length + t) * s.width + d)] =
            tokens[at(ids[at(b * length + t)] * s.width + d)] + positions[at(t * s.width + d)];
      }
    }
  }
  for (std::int64_t n = 0; n < s.layers; ++n) {
    x = trusted_block(x, batch, length, s.width, s.heads, p, fmt::format("blocks.{}.", n));
  }
  if (variant == GptVariant::right) x = trusted_layer_norm(x, s.width, p.at("ln_final.gain"), p.at("ln_final.bias"));
  return trusted_linear(x, s.width, p.at("head.weight"), s.vocab, p.at("head.bias"));
}

// The mean cross-entropy of logits (rows, vocab) against one target per row.
inline double trusted_loss(const Values& logits, std::int64_t vocab, const std::vector<std::int64_t>& targets) {
  double total = 0;
  for (std::size_t r = 0; r < targets.size(); ++r) {
    double largest = -INFINITY;
    for (std::int64_t c = 0; c < vocab; ++c) largest = std::max(largest, logits[r * at(vocab) + at(c)]);
    double sum = 0;
    for (std::int64_t c = 0; c < vocab; ++c) sum += std::exp(logits[r * at(vocab) + at(c)] - largest);
    total += largest + std::log(sum) - logits[r * at(vocab) + at(targets[r])];
  }
  return total / static_cast<double>(targets.size());
}

// Writes the test's values into every parameter of a model, found by name (inside an observation
// only). A parameter the test does not know, or of another size, is an error of the observation.
inline void load_parameters(const nn::Module& model, const Parameters& values) {
  for (const auto& [name, parameter] : model.named_parameters()) {
    const auto found = values.find(name);
    if (found == values.end()) throw std::logic_error("the model has a parameter \"" + name + "\" that the check does not know");
    Tensor handle = parameter;
    if (handle.numel() != static_cast<std::int64_t>(found->second.size())) {
      throw std::logic_error("the model's parameter \"" + name + "\" has shape " + to_string(handle.shape()));
    }
    float* data = handle.data();
    for (std::size_t n = 0; n < found->second.size(); ++n) data[n] = static_cast<float>(found->second[n]);
  }
}

// ---------------------------------------------------------------------------------------------
// Sampling

// The probabilities sample_token draws from (0 outside the top k), in double.
inline Values trusted_probabilities(const std::vector<float>& logits, double temperature, std::int64_t top_k) {
  const auto vocab = static_cast<std::int64_t>(logits.size());
  std::vector<std::int64_t> ranked(at(vocab));
  std::iota(ranked.begin(), ranked.end(), std::int64_t{0});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](std::int64_t a, std::int64_t b) { return logits[at(a)] > logits[at(b)]; });
  const std::int64_t count = top_k <= 0 || top_k >= vocab ? vocab : top_k;
  Values p(at(vocab), 0.0);
  double total = 0;
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t id = ranked[at(r)];
    total += p[at(id)] = std::exp((static_cast<double>(logits[at(id)]) - logits[at(ranked[0])]) / temperature);
  }
  for (double& value : p) value /= total;
  return p;
}

// The id that u selects: the first whose cumulative probability exceeds u.
inline std::int64_t trusted_pick(const Values& p, double u) {
  double cumulative = 0;
  std::int64_t last = 0;
  for (std::size_t id = 0; id < p.size(); ++id) {
    cumulative += p[id];
    if (p[id] > 0) last = static_cast<std::int64_t>(id);
    if (cumulative > u) return static_cast<std::int64_t>(id);
  }
  return last;
}

// count draws of sample_token from one generator, replayed.
inline std::vector<std::int64_t> trusted_samples(const std::vector<float>& logits, double temperature,
                                                 std::int64_t top_k, std::uint64_t seed, std::size_t count) {
  TrustedWichmannHill generator(seed);
  std::vector<std::int64_t> out;
  for (std::size_t n = 0; n < count; ++n) {
    if (temperature == 0) {
      out.push_back(std::max_element(logits.begin(), logits.end()) - logits.begin());
    } else {
      out.push_back(trusted_pick(trusted_probabilities(logits, temperature, top_k), generator.next()));
    }
  }
  return out;
}

}  // namespace kiln::transformer_testing
