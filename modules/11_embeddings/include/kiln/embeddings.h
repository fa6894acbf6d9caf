// Module 11, Embeddings: turning token ids into vectors, by indexing instead of multiplying.
//
// An embedding table W (num_embeddings, dim) holds one learned row per token id. Looking up the
// ids [i0, i1, ...] returns the rows W[i0], W[i1], ...: a gather. Mathematically that is the
// product one_hot(ids)·W, since a one-hot row picks out exactly one row of W; the product just
// spends num_embeddings multiply-adds per output value to do it. Its backward pass is the mirror
// image: the gradient of W is one_hot(ids)ᵀ·G, which is a scatter-add of G's rows into the rows
// the ids name, where an id that occurs several times collects the sum of its rows.
//
// Indices: a std::vector<std::int64_t> of token ids (integers, not floats), each in
// [0, num_embeddings). An id outside that range raises IndexError naming the id and the size.
//
// Layouts, all row-major float32:
//   table       W (num_embeddings, dim): row r holds the vector of id r
//   one-hot     (n, num_classes) for n ids: row k is 1 at column ids[k], 0 elsewhere
//   lookup      (n, dim): row k is W[ids[k]]
//   gradients   G (n, dim) for a lookup; dL/dW (num_embeddings, dim), like W
//   positions   (length, dim): row p is the vector of position p
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

using Indices = std::vector<std::int64_t>;

// ---------------------------------------------------------------------------------------------
// Yours (src/embedding.cpp)

// The (n, num_classes) one-hot matrix of n ids: 1 at (k, indices[k]), 0 elsewhere.
// Throws IndexError naming the id and num_classes when an id is not in [0, num_classes).
Tensor one_hot(const Indices& indices, std::int64_t num_classes);

// The gather: row k of the (n, dim) result is row indices[k] of weight (num_embeddings, dim),
// which may be a view, a contiguous one at an offset too: read it from data(), where it starts,
// never storage_data(). num_embeddings is weight's first size, also when dim is 0: a (5, 0) table
// has 5 rows of no values, and looking up {0, 4} gives an empty (2, 0) result. Throws ShapeError
// when weight is not 2-D, and IndexError naming the id and the table's number of rows when an id
// is not in [0, num_embeddings).
Tensor embedding_lookup(const Tensor& weight, const Indices& indices);

// The scatter-add, the lookup's backward pass: a (num_embeddings, dim) gradient, zero except that
// row indices[k] receives row k of grad_output (n, dim), which may be a view, for every k; an id
// that occurs several times receives the SUM of its rows. Throws ShapeError when grad_output is
// not (indices.size(), dim), also with no ids (then only a (0, dim) grad_output is taken, and gives
// zeros), and IndexError (naming the id and num_embeddings) for an id out of range.
Tensor embedding_backward(const Tensor& grad_output, const Indices& indices, std::int64_t num_embeddings);

// The lookup as a node of the autograd graph (module 06).
//   inputs: {weight (num_embeddings, dim)};  output: (n, dim)
struct EmbeddingFunction : autograd::Function {
  Indices indices;  // which rows the output took, kept for backward

  // embedding_lookup(inputs[0], indices).
  Tensor forward() override;
  // {embedding_backward(grad_output, indices, number of rows of inputs[0])}.
  std::vector<Tensor> backward(const Tensor& grad_output) override;

  // Given: records the node, like every module 06 operation.
  static Tensor apply(const Tensor& weight, Indices indices) {
    auto node = std::make_shared<EmbeddingFunction>();
    node->indices = std::move(indices);
    return Function::apply(node, {weight});
  }
};

// ---------------------------------------------------------------------------------------------
// Given (src/embedding_given.cpp)

// Values from the standard normal distribution N(0, 1), drawn in row-major order, two draws per
// value (Box-Muller): z = √(-2·ln(1 - u1))·cos(2π·u2) for the next u1, then u2 = generator.next().
Tensor normal_tensor(const Shape& shape, WichmannHill& generator);

// The redundant route, for comparison: one_hot(indices, rows of weight)·weight, computed by Eigen
// (cache blocking, SIMD). It builds the whole (n, num_embeddings) one-hot matrix with your one_hot.
Tensor one_hot_matmul(const Tensor& weight, const Indices& indices);

// Its backward pass: one_hot(indices, num_embeddings)ᵀ·grad_output, (num_embeddings, dim), computed
// by Eigen from the one-hot matrix without copying its transpose.
Tensor one_hot_matmul_backward(const Tensor& grad_output, const Indices& indices, std::int64_t num_embeddings);

// ---------------------------------------------------------------------------------------------
// Layers

// A table of num_embeddings learned vectors of size embedding_dim.
class Embedding {
 public:
  // Given: weight = normal_tensor({num_embeddings, embedding_dim}, WichmannHill(seed)), requiring
  // grad (PyTorch's nn.Embedding also starts from N(0, 1)).
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, std::uint64_t seed = 0);
  // Given: the same, drawing from `generator`.
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, WichmannHill& generator);

  // Yours (src/embedding.cpp): the rows of weight for the ids, (n, embedding_dim), through
  // EmbeddingFunction so that backward() reaches weight. The ids are one flat list: a caller with
  // a (B, T) batch flattens it row by row and reshapes the result to (B, T, embedding_dim) with
  // autograd::reshape.
  Tensor forward(const Indices& indices) const;

  std::int64_t num_embeddings = 0;
  std::int64_t embedding_dim = 0;
  Tensor weight;  // (num_embeddings, embedding_dim)
};

// A learned vector for each position 0 .. max_length - 1 of a sequence: an embedding table whose
// ids are the positions themselves.
class LearnedPositionalEmbedding {
 public:
  // Given: weight = normal_tensor({max_length, embedding_dim}, ...), requiring grad.
  LearnedPositionalEmbedding(std::int64_t max_length, std::int64_t embedding_dim, std::uint64_t seed = 0);
  LearnedPositionalEmbedding(std::int64_t max_length, std::int64_t embedding_dim, WichmannHill& generator);

  // Yours (src/positional.cpp): rows 0 .. length - 1 of weight, (length, embedding_dim), through
  // EmbeddingFunction so that backward() reaches weight; for length 0 too (an empty lookup, whose
  // (0, embedding_dim) result requires grad like any other). Throws IndexError naming length and
  // max_length when length is not in [0, max_length]: the table has no vector for a position
  // beyond it.
  Tensor forward(std::int64_t length) const;

  std::int64_t max_length = 0;
  std::int64_t embedding_dim = 0;
  Tensor weight;  // (max_length, embedding_dim)
};

// Yours (src/positional.cpp). The fixed sinusoidal position table of "Attention Is All You
// Need", (length, dim), nothing learned:
//   PE[p, 2i]     = sin(p / 10000^(2i / dim))
//   PE[p, 2i + 1] = cos(p / 10000^(2i / dim))
// Columns 2i and 2i + 1 share one frequency; with an odd dim the last column is a sine.
// Computed in double, stored as float. Throws IndexError when length < 0 or dim < 1.
Tensor sinusoidal_positional_embedding(std::int64_t length, std::int64_t dim);

}  // namespace kiln
