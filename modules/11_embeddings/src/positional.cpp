// Position vectors: a learned table indexed by position, and the fixed sinusoids.
#include <cmath>
#include <numeric>
#include <string>

#include "kiln/embeddings.h"

namespace kiln {

Tensor LearnedPositionalEmbedding::forward(std::int64_t length) const {
  // length must be in [0, max_length]: otherwise throw kiln::IndexError whose message names both
  // length and max_length ("length 9 is not in [0, 8]"). Then the ids are the positions
  // 0, 1, ..., length - 1 (std::iota fills them), looked up through EmbeddingFunction::apply so
  // that backward() reaches weight. Result (length, embedding_dim). Length 0 takes the same path
  // (no ids, an empty lookup): no shortcut, so that its result is recorded and requires grad.
  throw kiln::NotImplemented();
}

Tensor sinusoidal_positional_embedding(std::int64_t length, std::int64_t dim) {
  // IndexError when length < 0 or dim < 1. pe (length, dim), row-major, with, in double:
  //   angle = p / 10000^(2i / dim) for the pair of columns d = 2i and d = 2i + 1
  //   pe[p, 2i] = sin(angle), pe[p, 2i + 1] = cos(angle)
  // So the exponent uses the even column of the pair (d - d % 2), not d itself.
  // Row 0 is [0, 1, 0, 1, ...]; for dim = 4, row 1 is [sin 1, cos 1, sin 0.01, cos 0.01].
  throw kiln::NotImplemented();
}

}  // namespace kiln
