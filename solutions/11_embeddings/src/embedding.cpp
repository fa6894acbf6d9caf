// The lookup (a gather), its backward pass (a scatter-add), and the one-hot matrix they replace.
#include <algorithm>
#include <string>

#include "kiln/embeddings.h"

namespace kiln {

namespace {

// Every id must name a row of the table: [0, rows).
void check_index(std::int64_t index, std::int64_t rows, const char* what) {
  if (index < 0 || index >= rows) {
    throw IndexError(std::string(what) + ": index " + std::to_string(index) + " is out of range for a table of " +
                     std::to_string(rows) + " rows");
  }
}

}  // namespace

Tensor one_hot(const Indices& indices, std::int64_t num_classes) {
  const std::int64_t n = static_cast<std::int64_t>(indices.size());
  // out (n, num_classes), row-major: row k is 1 at column indices[k].
  Tensor out = Tensor::zeros({n, num_classes});
  float* values = out.data();
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t index = indices[static_cast<std::size_t>(k)];
    check_index(index, num_classes, "one_hot");
    values[k * num_classes + index] = 1.0f;
  }
  return out;
}

Tensor embedding_lookup(const Tensor& weight, const Indices& indices) {
  if (weight.dim() != 2) throw ShapeError("embedding_lookup needs a (num_embeddings, dim) table, got " + to_string(weight.shape()));
  const std::int64_t rows = weight.shape()[0];
  const std::int64_t dim = weight.shape()[1];
  const std::int64_t n = static_cast<std::int64_t>(indices.size());
  const Tensor table = weight.contiguous();  // (rows, dim): row r at r·dim
  const float* table_values = table.data();
  // out (n, dim), row-major: row k is a copy of row indices[k] of the table.
  Tensor out = Tensor::zeros({n, dim});
  float* out_values = out.data();
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t index = indices[static_cast<std::size_t>(k)];
    check_index(index, rows, "embedding_lookup");
    std::copy_n(table_values + index * dim, dim, out_values + k * dim);
  }
  return out;
}

Tensor embedding_backward(const Tensor& grad_output, const Indices& indices, std::int64_t num_embeddings) {
  const std::int64_t n = static_cast<std::int64_t>(indices.size());
  if (grad_output.dim() != 2 || grad_output.shape()[0] != n) {
    throw ShapeError("embedding_backward needs a gradient of (" + std::to_string(n) + ", dim) for " +
                     std::to_string(n) + " indices, got " + to_string(grad_output.shape()));
  }
  const std::int64_t dim = grad_output.shape()[1];
  const Tensor g = grad_output.contiguous();  // (n, dim)
  const float* g_values = g.data();
  // grad (num_embeddings, dim), row-major, zero where no id points.
  Tensor grad = Tensor::zeros({num_embeddings, dim});
  float* grad_values = grad.data();
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t index = indices[static_cast<std::size_t>(k)];
    check_index(index, num_embeddings, "embedding_backward");
    float* grad_row = grad_values + index * dim;
    const float* g_row = g_values + k * dim;
    for (std::int64_t d = 0; d < dim; ++d) grad_row[d] += g_row[d];
  }
  return grad;
}

Tensor EmbeddingFunction::forward() { return embedding_lookup(inputs[0], indices); }

std::vector<Tensor> EmbeddingFunction::backward(const Tensor& grad_output) {
  return {embedding_backward(grad_output, indices, inputs[0].shape()[0])};
}

Tensor Embedding::forward(const Indices& indices) const { return EmbeddingFunction::apply(weight, indices); }

}  // namespace kiln
