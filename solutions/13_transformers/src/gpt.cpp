// The GPT's forward pass from token ids to logits, and the language-model loss.
#include <string>

#include "kiln/transformer.h"

namespace kiln::nn {

Tensor GPT::forward(const Tensor& tokens) {
  const Indices ids = token_ids(tokens);  // B·T ids, row-major
  const std::int64_t batch = tokens.shape()[0], length = tokens.shape()[1];
  const std::int64_t width = config.model_dim;
  // x (B, T, D): the token's vector plus its position's, the (T, D) table broadcast over B.
  Tensor x = autograd::reshape(token_embedding.forward(ids), {batch, length, width});
  x = autograd::add(x, position_embedding.forward(length));
  for (const auto& block : blocks) x = block->forward(x);
  x = ln_final->forward(x);
  // logits (B·T, V) -> (B, T, V)
  const Tensor logits = head->forward(autograd::reshape(x, {batch * length, width}));
  return autograd::reshape(logits, {batch, length, config.vocab_size});
}

Tensor lm_loss(const Tensor& logits, const Indices& targets) {
  const auto count = static_cast<std::int64_t>(targets.size());
  if (logits.dim() != 3 || logits.shape()[0] * logits.shape()[1] != count) {
    throw ShapeError("lm_loss: logits " + to_string(logits.shape()) + " and targets (" + std::to_string(count) + ")");
  }
  const std::int64_t rows = logits.shape()[0] * logits.shape()[1];
  // Row b·T + t of the (B·T, V) logits is position t of sequence b, as in the targets.
  return cross_entropy_loss(autograd::reshape(logits, {rows, logits.shape()[2]}), targets);
}

}  // namespace kiln::nn
