// Given: the layers' constructors (the GPT-2 initialisation), the GELU node's recording, and the
// conversions between token ids and the (B, T) token tensor.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/transformer.h"

namespace kiln::autograd {

Tensor gelu(const Tensor& x) { return Function::apply(std::make_shared<GeluFunction>(), {x}); }

}  // namespace kiln::autograd

namespace kiln::nn {

namespace {

// std·z for z standard normal, row-major, two draws per value (module 11's normal_tensor).
Tensor normal(const Shape& shape, double std, WichmannHill& generator) {
  Tensor t = normal_tensor(shape, generator);
  float* values = t.data();
  for (std::int64_t i = 0; i < t.numel(); ++i) values[i] = static_cast<float>(std * values[i]);
  return t;
}

// Re-draws a Linear's weight as std·z and zeroes its bias, in place (the handles stay registered).
void reinitialise(Linear& layer, double std, WichmannHill& generator) {
  const Tensor drawn = normal(layer.weight.shape(), std, generator);
  std::copy(drawn.data(), drawn.data() + drawn.numel(), layer.weight.data());
  std::fill(layer.bias.data(), layer.bias.data() + layer.bias.numel(), 0.0f);
}

const GPTConfig& checked(const GPTConfig& c) {
  if (c.vocab_size < 1 || c.max_length < 1 || c.model_dim < 1 || c.heads < 1 || c.layers < 1) {
    throw std::invalid_argument("GPT needs every size >= 1, got vocab_size " + std::to_string(c.vocab_size) +
                                ", max_length " + std::to_string(c.max_length) + ", model_dim " +
                                std::to_string(c.model_dim) + ", heads " + std::to_string(c.heads) + ", layers " +
                                std::to_string(c.layers));
  }
  if (c.model_dim % c.heads != 0) {
    throw ShapeError("GPT needs heads that divide model_dim, got model_dim " + std::to_string(c.model_dim) +
                     " and heads " + std::to_string(c.heads));
  }
  return c;
}

// The generator a delegating constructor draws from, alive until that constructor returns.
WichmannHill& lvalue(WichmannHill&& generator) { return generator; }

}  // namespace

LayerNorm::LayerNorm(std::int64_t dim, double eps) : dim(dim), eps(eps) {
  if (dim < 1) throw std::invalid_argument("LayerNorm(" + std::to_string(dim) + "): the size must be at least 1");
  gain = register_parameter("gain", Tensor::ones({dim}));
  bias = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, gain, bias, eps); }

CausalSelfAttention::CausalSelfAttention(std::int64_t model_dim, std::int64_t heads, WichmannHill& generator,
                                         double std, double proj_std)
    : model_dim(model_dim), heads(heads) {
  if (model_dim < 1 || heads < 1 || model_dim % heads != 0) {
    throw ShapeError("CausalSelfAttention needs heads that divide model_dim, got model_dim " +
                     std::to_string(model_dim) + " and heads " + std::to_string(heads));
  }
  w_query = register_parameter("w_query", normal({model_dim, model_dim}, std, generator));
  w_key = register_parameter("w_key", normal({model_dim, model_dim}, std, generator));
  w_value = register_parameter("w_value", normal({model_dim, model_dim}, std, generator));
  w_out = register_parameter("w_out", normal({model_dim, model_dim}, proj_std, generator));
}

MLP::MLP(std::int64_t dim, WichmannHill& generator, double std, double proj_std) : dim(dim) {
  // Module 08's Linear draws PyTorch's uniform initialisation from the generator it is given; a
  // scratch generator keeps those draws out of the model's sequence, and the weights are then
  // re-drawn from the model's generator.
  WichmannHill scratch(0);
  fc = std::make_shared<Linear>(dim, 4 * dim, scratch);
  proj = std::make_shared<Linear>(4 * dim, dim, scratch);
  reinitialise(*fc, std, generator);
  reinitialise(*proj, proj_std, generator);
  register_module("fc", fc);
  register_module("proj", proj);
}

TransformerBlock::TransformerBlock(std::int64_t model_dim, std::int64_t heads, WichmannHill& generator, double std,
                                   double proj_std) {
  ln1 = std::make_shared<LayerNorm>(model_dim);
  attention = std::make_shared<CausalSelfAttention>(model_dim, heads, generator, std, proj_std);
  ln2 = std::make_shared<LayerNorm>(model_dim);
  mlp = std::make_shared<MLP>(model_dim, generator, std, proj_std);
  register_module("ln1", ln1);
  register_module("attention", attention);
  register_module("ln2", ln2);
  register_module("mlp", mlp);
}

GPT::GPT(const GPTConfig& c, WichmannHill& generator)
    : config(checked(c)),
      token_embedding(c.vocab_size, c.model_dim, generator),
      position_embedding(c.max_length, c.model_dim, generator) {
  // Module 11's tables draw N(0, 1); GPT-2 starts them at 0.02·z from the same draws.
  for (Tensor* table : {&token_embedding.weight, &position_embedding.weight}) {
    float* values = table->data();
    for (std::int64_t i = 0; i < table->numel(); ++i) values[i] = static_cast<float>(0.02 * values[i]);
  }
  token_embedding.weight = register_parameter("token_embedding", token_embedding.weight);
  position_embedding.weight = register_parameter("position_embedding", position_embedding.weight);

  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers));
  std::vector<std::shared_ptr<Module>> stack;
  for (std::int64_t n = 0; n < c.layers; ++n) {
    blocks.push_back(std::make_shared<TransformerBlock>(c.model_dim, c.heads, generator, 0.02, proj_std));
    stack.push_back(blocks.back());
  }
  register_module("blocks", std::make_shared<Sequential>(std::move(stack)));

  ln_final = std::make_shared<LayerNorm>(c.model_dim);
  register_module("ln_final", ln_final);
  WichmannHill scratch(0);
  head = std::make_shared<Linear>(c.model_dim, c.vocab_size, scratch);
  reinitialise(*head, 0.02, generator);
  register_module("head", head);
}

GPT::GPT(const GPTConfig& config, std::uint64_t seed) : GPT(config, lvalue(WichmannHill(seed))) {}

Tensor token_tensor(const Indices& ids, std::int64_t batch) {
  const auto count = static_cast<std::int64_t>(ids.size());
  if (batch < 1 || count % batch != 0) {
    throw ShapeError("token_tensor: " + std::to_string(count) + " ids do not make " + std::to_string(batch) +
                     " sequences of one length");
  }
  // tokens (batch, T), row-major: sequence b's token t at b·T + t.
  std::vector<float> values(ids.begin(), ids.end());
  return Tensor({batch, count / batch}, std::move(values));
}

Indices token_ids(const Tensor& tokens) {
  if (tokens.dim() != 2) throw ShapeError("token ids must be a (B, T) tensor, got " + to_string(tokens.shape()));
  Indices ids;
  for (const float value : tokens.to_vector()) {
    if (!(value >= 0.0f) || value != std::floor(value)) {
      throw IndexError("a token id must be a whole number >= 0, got " + std::to_string(value));
    }
    ids.push_back(static_cast<std::int64_t>(value));
  }
  return ids;
}

}  // namespace kiln::nn
