// Given: the standard normal draws the tables start from, and the layers' constructors.
#include <cmath>
#include <numbers>
#include <vector>

#include "kiln/embeddings.h"

namespace kiln {

Tensor normal_tensor(const Shape& shape, WichmannHill& generator) {
  // Box-Muller: two independent uniforms make one standard normal value. 1 - u1 lies in (0, 1],
  // so the logarithm is always finite.
  std::vector<float> values(static_cast<std::size_t>(numel(shape)));
  for (float& v : values) {
    const double u1 = generator.next();
    const double u2 = generator.next();
    v = static_cast<float>(std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2));
  }
  return Tensor(shape, std::move(values));
}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, WichmannHill& generator)
    : num_embeddings(num_embeddings), embedding_dim(embedding_dim) {
  weight = normal_tensor({num_embeddings, embedding_dim}, generator);
  weight.set_requires_grad(true);
}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, std::uint64_t seed) {
  WichmannHill generator(seed);
  *this = Embedding(num_embeddings, embedding_dim, generator);
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(std::int64_t max_length, std::int64_t embedding_dim,
                                                       WichmannHill& generator)
    : max_length(max_length), embedding_dim(embedding_dim) {
  weight = normal_tensor({max_length, embedding_dim}, generator);
  weight.set_requires_grad(true);
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(std::int64_t max_length, std::int64_t embedding_dim,
                                                       std::uint64_t seed) {
  WichmannHill generator(seed);
  *this = LearnedPositionalEmbedding(max_length, embedding_dim, generator);
}

}  // namespace kiln
