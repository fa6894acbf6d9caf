// The GPT's forward pass from token ids to logits, and the language-model loss.
#include <string>

#include "kiln/transformer.h"

namespace kiln::nn {

Tensor GPT::forward(const Tensor& tokens) {
  // tokens (B, T). ids = token_ids(tokens), B·T of them, row-major; it raises IndexError for a
  // value that is no id (2.5, -0.5), which a cast of the floats would run as ids 2 and 0.
  //   x = token_embedding.forward(ids), reshaped (autograd) to (B, T, D)
  //   x = x + position_embedding.forward(T): (T, D), broadcast over the batch by autograd::add
  //   every block in order, then ln_final
  //   logits = head on the (B·T, D) rows, reshaped to (B, T, V)
  throw kiln::NotImplemented();
}

Tensor lm_loss(const Tensor& logits, const Indices& targets) {
  // logits (B, T, V), targets B·T ids with targets[b·T + t] for position t of sequence b.
  // ShapeError naming the logits' shape and the number of targets, e.g.
  // "lm_loss: logits (2, 3, 5) and targets (5)", unless logits is 3-D with B·T == targets.size().
  // Then cross_entropy_loss (module 08) of the logits reshaped (autograd) to (B·T, V): row b·T + t
  // is position t of sequence b, the same order as the targets.
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
