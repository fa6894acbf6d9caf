// Position vectors: a learned table indexed by position, and the fixed sinusoids.
#include <cmath>
#include <numeric>
#include <string>

#include "kiln/embeddings.h"

namespace kiln {

Tensor LearnedPositionalEmbedding::forward(std::int64_t length) const {
  if (length < 0 || length > max_length) {
    throw IndexError("LearnedPositionalEmbedding: length " + std::to_string(length) + " is not in [0, " +
                     std::to_string(max_length) + "] (max_length " + std::to_string(max_length) + ")");
  }
  Indices positions(static_cast<std::size_t>(length));
  std::iota(positions.begin(), positions.end(), std::int64_t{0});  // 0, 1, ..., length - 1
  return EmbeddingFunction::apply(weight, std::move(positions));
}

Tensor sinusoidal_positional_embedding(std::int64_t length, std::int64_t dim) {
  if (length < 0 || dim < 1) {
    throw IndexError("sinusoidal_positional_embedding needs length >= 0 and dim >= 1, got " + std::to_string(length) +
                     " and " + std::to_string(dim));
  }
  // pe (length, dim), row-major: row p is the vector of position p.
  Tensor pe = Tensor::zeros({length, dim});
  float* values = pe.data();
  for (std::int64_t p = 0; p < length; ++p) {
    for (std::int64_t d = 0; d < dim; ++d) {
      // Columns 2i and 2i + 1 share the frequency 1 / 10000^(2i / dim).
      const std::int64_t pair_start = d - d % 2;
      const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(pair_start) / dim);
      values[p * dim + d] = static_cast<float>(d % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return pe;
}

}  // namespace kiln
